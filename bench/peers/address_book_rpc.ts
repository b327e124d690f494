// The matrix ceilings' AddressService: each method's request decoded and its answer encoded with
// the generated protobuf code this project's server uses (rpc/gen, @bufbuild/protobuf), around
// one operation of address_book_kv.ts. No validation, interceptors or error details: a method
// that finds no address answers NOT_FOUND with no message. Shared by the Connect and gRPC-Web
// framings of raw_kv_address_book.ts and the gRPC of bare_http2_address_book.ts.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type Address as AddressMessage,
  AddressSchema,
  CreateAddressRequestSchema,
  DeleteAddressRequestSchema,
  GetAddressRequestSchema,
  ListAddressesRequestSchema,
  ListAddressesResponseSchema,
  ReplaceAddressRequestSchema,
  UpdateAddressRequestSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { type AddressBook, NotFound, type Stored } from "./address_book_kv.ts";

/** The address fields of the message (every field but the id and the etag). */
const FIELDS = AddressSchema.fields.filter((f) => f.localName !== "id" && f.localName !== "etag")
  .map((f) => f.localName);
const DEFAULT_PAGE = 50;

/** A gRPC status other than OK (5: NOT_FOUND). */
export class RpcStatus extends Error {
  constructor(readonly code: number) {
    super(`grpc-status ${code}`);
  }
}

/** The message of a stored address. */
export function message({ address, etag }: Stored): AddressMessage {
  const init: Record<string, unknown> = { id: BigInt(address.id), etag };
  for (const name of FIELDS) if (address[name] !== undefined) init[name] = address[name];
  return create(AddressSchema, init);
}

/** The fields a message sets (proto3: an empty string is an absent field). */
function fieldsOf(m: AddressMessage | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = (m as unknown as Record<string, string> | undefined)?.[name];
    if (value) out[name] = value;
  }
  return out;
}

/** Answers one unary call of `addresses.v1.AddressService` (`method`: its name). */
export async function addressCall(
  book: AddressBook,
  method: string,
  request: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  try {
    switch (method) {
      case "GetAddress": {
        const stored = await book.get(Number(fromBinary(GetAddressRequestSchema, request).id));
        if (!stored) throw new NotFound();
        return toBinary(AddressSchema, message(stored));
      }
      case "ListAddresses": {
        const r = fromBinary(ListAddressesRequestSchema, request);
        const page = await book.page(
          r.pageSize || DEFAULT_PAGE,
          book.cursors.position(r.pageToken),
        );
        return toBinary(
          ListAddressesResponseSchema,
          create(ListAddressesResponseSchema, {
            addresses: page.items.map(message),
            nextPageToken: page.next === null ? "" : book.cursors.after(page.next),
          }),
        );
      }
      case "CreateAddress": {
        const r = fromBinary(CreateAddressRequestSchema, request);
        return toBinary(AddressSchema, message(await book.create(fieldsOf(r.address))));
      }
      case "ReplaceAddress": {
        const r = fromBinary(ReplaceAddressRequestSchema, request);
        const stored = await book.replaceV1(Number(r.id), fieldsOf(r.address));
        return toBinary(AddressSchema, message(stored));
      }
      case "UpdateAddress": {
        const r = fromBinary(UpdateAddressRequestSchema, request);
        return toBinary(
          AddressSchema,
          message(await book.update(Number(r.id), fieldsOf(r.address))),
        );
      }
      case "DeleteAddress": {
        await book.remove(Number(fromBinary(DeleteAddressRequestSchema, request).id));
        return new Uint8Array(0); // google.protobuf.Empty
      }
    }
  } catch (error) {
    if (error instanceof NotFound) throw new RpcStatus(5);
    throw error;
  }
  throw new RpcStatus(12); // UNIMPLEMENTED
}
