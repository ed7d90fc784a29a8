// SHA-256, HMAC-SHA256 and Ed25519 from WebCrypto (`crypto.subtle`): the browser's own
// implementations (and node's, for the vector tests), no JavaScript crypto of ours.

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (s === undefined) throw new Error("WebCrypto is not available (a secure context is needed)");
  return s;
}

// WebCrypto wants ArrayBuffer-backed views; copying keeps TypeScript's BufferSource happy
// with views over SharedArrayBuffer-typed buffers too.
function buf(b: Uint8Array): ArrayBuffer {
  return b.slice().buffer as ArrayBuffer;
}

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().digest("SHA-256", buf(data)));
}

/** A keyed HMAC-SHA256: importing the key once and reusing it is what makes re-deriving
 * thousands of dice blocks fast. */
export async function hmacKey(key: Uint8Array): Promise<(message: Uint8Array) => Promise<Uint8Array>> {
  const k = await subtle().importKey("raw", buf(key), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return async (message) => new Uint8Array(await subtle().sign("HMAC", k, buf(message)));
}

/** Whether `signature` is `publicKey`'s Ed25519 (RFC 8032, pure) signature over `message`.
 * A malformed key or signature is simply not valid. */
export async function ed25519Verify(
  publicKey: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    const key = await subtle().importKey("raw", buf(publicKey), { name: "Ed25519" }, false, [
      "verify",
    ]);
    return await subtle().verify({ name: "Ed25519" }, key, buf(signature), buf(message));
  } catch {
    return false;
  }
}
