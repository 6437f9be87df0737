/**
 * Small helpers @lancedb/lancedb 0.39 exports from its root.
 */
import { invalid } from "./errors";

/**
 * Packs bits (numbers 0 or 1) into bytes, least significant bit first, as 0.39's `packBits`: 8 bits a byte, the
 * last byte padded with zeros. Anything but 0 or 1 is an InvalidInputError naming its place.
 */
export function packBits(data: number[]): number[] {
  if (!Array.isArray(data)) throw invalid("packBits(data) must be an array of 0s and 1s");
  const packed = new Array<number>(Math.ceil(data.length / 8)).fill(0);
  data.forEach((b, i) => {
    if (b !== 0 && b !== 1) throw invalid(`packBits(data)[${i}] is ${String(b)}: bits are 0 or 1`);
    packed[i >> 3] |= b << (i & 7);
  });
  return packed;
}
