/**
 * A configuration value that stops start-up, with one line naming the variable.
 *
 * In its own module so that code which only throws or recognises it (the gRPC listener's
 * process among them) does not load the configuration schema and its validation library.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
}
