/** How messages and backups name a KV: its file path, `remote` or `platform`, never a URL (it may carry a token). */
export function kvLabel(config: { kvPlatform: boolean; kvPath: string }): string {
  if (config.kvPlatform) return "platform";
  return /^https?:\/\//.test(config.kvPath) ? "remote" : config.kvPath;
}
