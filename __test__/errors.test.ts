import * as fs from "node:fs";
import * as path from "node:path";
import { connect, ERROR_CLASSES, ERROR_CODES, MemwalError } from "../lib";
import { convertError } from "../lib/errors";
import { native } from "../lib/native";
import { people, tmpDir } from "./helpers";

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

describe("the Rust source chain", () => {
  test("arrives as err.cause, outermost first, not in the message", async () => {
    const file = path.join(tmpDir(), "a-file");
    fs.writeFileSync(file, "x");
    const err = await connect(path.join(file, "db"))
      .then((db) => db.createTable("t", people([[1, 1]])))
      .then(
        () => null,
        (e: unknown) => e as MemwalError,
      );
    expect(err?.code).toBe("Io");
    expect(err?.message).not.toContain("[memwal:");
    const cause = err?.cause as Error;
    expect(cause).toBeInstanceOf(Error);
    expect(cause.message).toMatch(/Not a directory|os error 20/);
  });

  test("a message with no chain keeps the addon's error as its cause", () => {
    const raw = new Error("[memwal:InvalidInput] bad");
    const e = convertError(raw);
    expect([e.message, e.cause]).toEqual(["bad", raw]);
    const chained = convertError(new Error("[memwal:Io] outer\n[memwal:cause] middle\n[memwal:cause] inner"));
    expect(chained.message).toBe("outer");
    expect((chained.cause as Error).message).toBe("middle");
    expect(((chained.cause as Error).cause as Error).message).toBe("inner");
  });
});
