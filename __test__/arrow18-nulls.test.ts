/**
 * When the apache-arrow that memwal's own code resolves is 18 (npm may dedupe to the service's copy, as in the
 * harness that runs LanceDB's suite), a vector column with null rows must still make valid Arrow: apache-arrow
 * 18's builder leaves a null row without child values. memwal builds such a column itself.
 */
jest.mock("apache-arrow", () => jest.requireActual("apache-arrow-18"));

import { connect } from "../lib";

test("null vectors written through apache-arrow 18 are null rows", async () => {
  const db = await connect("memory://");
  const t = await db.createTable("t", [
    { id: 1, vector: [1, 2, 3] },
    { id: 2, vector: null },
  ]);
  expect(await t.countRows()).toBe(2);
  await t.add([{ id: 3 }, { id: 4, vector: undefined }, { id: 5, vector: [7, 8, 9] }]);
  const rows = (await t.query().toArray())
    .map((r) => [Number(r.id), r.vector === null ? null : Array.from(r.vector as Iterable<number>)])
    .sort((a, b) => Number(a[0]) - Number(b[0]));
  expect(rows).toEqual([
    [1, [1, 2, 3]],
    [2, null],
    [3, null],
    [4, null],
    [5, [7, 8, 9]],
  ]);
});
