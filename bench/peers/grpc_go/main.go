// The grpc-go peer: the gRPC server a Go user would write, serving books.v1.BooksService/books
// over HTTP/2 cleartext with grpc-go's defaults. Every call is answered with one BooksResponse
// encoded once at start (BOOKS_MESSAGE: the protobuf bytes the bench encodes from the catalogue,
// the same the other gRPC peers send; the bench checks that), so no generated code is needed: the
// service is a hand-written ServiceDesc and the codec passes bytes through. grpc-go still parses
// the request, frames and flushes the answer and sends the trailers as for any service. GOMAXPROCS
// is left to the environment (the bench sets 1 for one core). Prints one JSON `listening` line.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

// rawCodec marshals a []byte as itself and unmarshals into a *[]byte, whatever the content
// subtype: the request is an empty BooksRequest, the answer bytes are already encoded.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	switch m := v.(type) {
	case []byte:
		return m, nil
	case *[]byte:
		return *m, nil
	}
	return nil, fmt.Errorf("rawCodec cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	m, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec cannot unmarshal into %T", v)
	}
	*m = append((*m)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// String makes rawCodec a grpc.Codec too, the type grpc.CustomCodec takes in grpc-go 1.33.
func (rawCodec) String() string { return "proto" }

func booksHandler(answer []byte) func(interface{}, context.Context, func(interface{}) error, grpc.UnaryServerInterceptor) (interface{}, error) {
	return func(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
		var request []byte
		if err := dec(&request); err != nil {
			return nil, err
		}
		handle := func(context.Context, interface{}) (interface{}, error) { return answer, nil }
		if interceptor == nil {
			return handle(ctx, &request)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/books.v1.BooksService/books"}
		return interceptor(ctx, &request, info, handle)
	}
}

func main() {
	answer, err := os.ReadFile(os.Getenv("BOOKS_MESSAGE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "BOOKS_MESSAGE:", err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.CustomCodec(rawCodec{}))
	server.RegisterService(&grpc.ServiceDesc{
		ServiceName: "books.v1.BooksService",
		HandlerType: (*interface{})(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "books", Handler: booksHandler(answer)}},
		Metadata:    "books/v1/books.proto",
	}, struct{}{})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	fmt.Printf("{\"msg\":\"listening\",\"grpc\":\"http://127.0.0.1:%d\"}\n", port)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		time.AfterFunc(2*time.Second, func() { os.Exit(0) })
		server.GracefulStop()
		os.Exit(0)
	}()
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
