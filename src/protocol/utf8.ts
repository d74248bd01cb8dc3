// UTF-8 as ethers 6's toUtf8Bytes writes it, without ethers (OIS encoding, the ids and EIP-191 messages need it).

// With the u flag a well-formed pair is one code point, so this matches only unpaired surrogates.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Buffer's bytes for well-formed strings; with unpaired surrogates (where Buffer would write U+FFFD) a lone low
 * surrogate is encoded as its own three bytes and a lone high one throws, as in ethers.
 */
export function ethersUtf8Bytes(text: string): Buffer {
  if (!LONE_SURROGATE.test(text)) return Buffer.from(text, 'utf8');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push((c >> 6) | 0xc0, (c & 0x3f) | 0x80);
    else if ((c & 0xfc00) === 0xd800) {
      i++;
      const low = text.charCodeAt(i);
      if (i >= text.length || (low & 0xfc00) !== 0xdc00) throw new TypeError('invalid surrogate pair');
      const point = 0x10000 + ((c & 0x03ff) << 10) + (low & 0x03ff);
      bytes.push(
        (point >> 18) | 0xf0,
        ((point >> 12) & 0x3f) | 0x80,
        ((point >> 6) & 0x3f) | 0x80,
        (point & 0x3f) | 0x80,
      );
    } else bytes.push((c >> 12) | 0xe0, ((c >> 6) & 0x3f) | 0x80, (c & 0x3f) | 0x80);
  }
  return Buffer.from(bytes);
}

/** Whether the text has an unpaired surrogate (Buffer and ethers write it differently). */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}
