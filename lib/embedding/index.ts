/**
 * `memwal/embedding`: embedding functions with the names of `@lancedb/lancedb/embedding` 0.39. A function
 * registered by name (`@register("name")`) and given to `createTable(.., { embeddingFunction })` or declared in
 * a `LanceSchema` fills the vector column from the source column on every write that lacks it, and makes
 * `search("text")` a vector search. The `openai` provider calls any OpenAI-compatible endpoint; providers that
 * download models (`huggingface` / transformers) are refused as not supported.
 */
import { type DataType, Field, Schema } from "apache-arrow";
import { invalid } from "../errors";
import { ourType } from "../foreign";
import { schemaFunctions, withRecord } from "./apply";
import type { EmbeddingFunction } from "./embedding_function";
import { type EmbeddingMetadataEntry, getRegistry, type ResolvedEmbeddingFunctionConfig } from "./registry";
import "./openai";
import { Table as ArrowTable } from "apache-arrow";

export {
  EmbeddingFunction,
  type EmbeddingFunctionConstructor,
  type EmbeddingVector,
  type FieldOptions,
  type FunctionOptions,
  TextEmbeddingFunction,
} from "./embedding_function";
export { OpenAIEmbeddingFunction, type OpenAIOptions } from "./openai";
export type {
  CreateReturnType,
  EmbeddingFunctionConfig,
  EmbeddingFunctionCreate,
  EmbeddingMetadataEntry,
  ResolvedEmbeddingFunctionConfig,
} from "./registry";
export { EmbeddingFunctionRegistry, getRegistry, parseEmbeddingMetadata, register } from "./registry";

/** A field declared by `sourceField()` / `vectorField()`: its type and the function that fills or reads it. */
export type Declared = [object, Map<string, EmbeddingFunction>];

const isDeclared = (v: unknown): v is Declared => Array.isArray(v) && v.length === 2 && v[1] instanceof Map;

/**
 * A schema with embedding functions: plain DataTypes, and each function's `sourceField(..)` and
 * `vectorField(..)`. The functions are recorded in the schema's metadata (`embedding_functions`), so
 * `createEmptyTable(name, schema)` / `createTable(name, data, { schema })` make a table that embeds.
 */
export function LanceSchema(fields: Record<string, Declared | object>): Schema {
  if (fields === null || typeof fields !== "object")
    throw invalid("LanceSchema(fields) takes { column: DataType | func.sourceField(..) | func.vectorField(..) }");
  const roles = new Map<EmbeddingFunction, { source?: string; vector?: string }>();
  const out: Field[] = [];
  for (const [name, v] of Object.entries(fields)) {
    if (!isDeclared(v)) {
      out.push(new Field(name, ourType(v as DataType), true));
      continue;
    }
    out.push(new Field(name, ourType(v[0] as DataType), true));
    for (const [role, fn] of v[1]) {
      if (role !== "source" && role !== "vector") throw invalid(`LanceSchema: column '${name}' has an unknown embedding role '${role}'`);
      const r = roles.get(fn) ?? {};
      if (r[role] !== undefined) throw invalid(`LanceSchema: one embedding function has two ${role} columns ('${r[role]}' and '${name}')`);
      r[role] = name;
      roles.set(fn, r);
    }
  }
  const configs: ResolvedEmbeddingFunctionConfig[] = [...roles].map(([fn, r]) => {
    if (r.source === undefined || r.vector === undefined)
      throw invalid(
        `LanceSchema: embedding function ${fn.constructor?.name} needs both a sourceField and a vectorField (has ${r.source ?? r.vector})`,
      );
    return { function: fn, sourceColumn: r.source, vectorColumn: r.vector };
  });
  const entries = configs.map((c) => getRegistry().functionToMetadata(c) as EmbeddingMetadataEntry);
  const schema = configs.length === 0 ? new Schema(out) : withRecord(new ArrowTable(new Schema(out)), entries).schema;
  if (configs.length > 0) schemaFunctions.set(schema, configs);
  return schema;
}
