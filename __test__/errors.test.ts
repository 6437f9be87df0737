import { ERROR_CLASSES, ERROR_CODES, MemwalError } from "../lib";
import { convertError } from "../lib/errors";
import { native } from "../lib/native";

describe("error codes", () => {
  test("the TypeScript list is the Rust ErrorCode list, in order", () => {
    expect([...ERROR_CODES]).toEqual(native.errorCodes());
  });

  test("each code has its own subclass, named after it", () => {
    const names = new Set<string>();
    for (const code of ERROR_CODES) {
      const e = convertError(new Error(`[memwal:${code}] something`));
      expect(e).toBeInstanceOf(ERROR_CLASSES[code]);
      expect(e).toBeInstanceOf(MemwalError);
      expect(e.code).toBe(code);
      expect(e.name).toBe(`${code}Error`);
      expect(e.message).toBe("something");
      names.add(e.name);
    }
    expect(names.size).toBe(ERROR_CODES.length);
  });

  test("an unknown code or a foreign error is Internal, with the original as cause", () => {
    const raw = new Error("[memwal:Nonsense] x");
    const e = convertError(raw);
    expect(e.code).toBe("Internal");
    expect(e.cause).toBe(raw);
  });
});
