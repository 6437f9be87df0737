/**
 * Which part of a schema `makeArrowTable(rows, { schema })` makes, as 0.39 decides it: the columns some row gives
 * a value for (a key whose value is `undefined` gives none), in the schema's order, and of a struct column only
 * the fields some row gives (recursively). A struct given only as null keeps all its fields. A struct that a row
 * gives as null (or another non-object) before a later row gives it as an object is refused, as 0.39 refuses it.
 */
import { Field, Struct, Type } from "apache-arrow";

import { invalid } from "./errors";

/** The paths the rows give values at: a leaf, or a branch of named children. */
type Node = "leaf" | Map<string, Node>;

/** An object whose keys are nested fields (0.39's test: not an array, Date, RegExp, Set, Map or typed array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof RegExp) &&
    !(v instanceof Date) &&
    !(v instanceof Set) &&
    !(v instanceof Map) &&
    !ArrayBuffer.isView(v)
  );
}

/** Every path of `record` that holds a value other than undefined (objects are walked into). */
function* leafPaths(record: Record<string, unknown>, path: string[] = []): Generator<string[]> {
  for (const [name, value] of Object.entries(record)) {
    if (isRecord(value)) yield* leafPaths(value, [...path, name]);
    else if (value !== undefined) yield [...path, name];
  }
}

/** Adds `path` to `tree` unless a value is already there (the first row to give a path decides its shape). */
function observe(tree: Map<string, Node>, path: string[], row: number): void {
  let branch = tree;
  for (const [i, name] of path.entries()) {
    const child = branch.get(name);
    if (i === path.length - 1) {
      if (child === undefined) branch.set(name, "leaf");
      return;
    }
    if (child === "leaf") {
      throw invalid(
        `column '${path.slice(0, i + 1).join(".")}': row ${row} gives it as an object but an earlier row gave a non-object (null) there; @lancedb/lancedb refuses this too: give the objects first or pass an Arrow table`,
      );
    }
    const next = child ?? new Map<string, Node>();
    branch.set(name, next);
    branch = next;
  }
}

/** The fields of `fields` the tree has, structs cut down to the children the tree has. */
function matching(fields: readonly Field[], tree: Map<string, Node>): Field[] {
  return fields.flatMap((f) => {
    const node = tree.get(f.name);
    if (node === undefined) return [];
    if (node === "leaf" || f.type.typeId !== Type.Struct) return [f];
    return [new Field(f.name, new Struct(matching(f.type.children, node)), f.nullable, f.metadata)];
  });
}

/** The fields of `fields` that `rows` give values for, as 0.39's makeArrowTable keeps them. */
export function usedFields(rows: ReadonlyArray<Record<string, unknown>>, fields: readonly Field[]): Field[] {
  const tree = new Map<string, Node>();
  rows.forEach((r, row) => {
    for (const p of leafPaths(r)) observe(tree, p, row);
  });
  return matching(fields, tree);
}
