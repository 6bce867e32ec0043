// A leaf's TLS context that keeps the PEM it was made of: Bun's SecureContext keeps none, and the terminator's native
// TLS (proxy/native-tls.ts) starts a server from the PEM itself; node:tls takes the context as before.
import { createSecureContext, type SecureContext } from "node:tls";

const pems = new WeakMap<SecureContext, { cert: string; key: string }>();

/** A context for `cert` (the leaf, then its chain) and `key`, its PEM kept for `leafPem`. */
export function leafContext(cert: string, key: string): SecureContext {
  const ctx = createSecureContext({ cert, key });
  pems.set(ctx, { cert, key });
  return ctx;
}

/** The PEM a context was made of by `leafContext`; undefined for any other. */
export function leafPem(ctx: SecureContext): { cert: string; key: string } | undefined {
  return pems.get(ctx);
}
