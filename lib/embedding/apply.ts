/**
 * Embedding functions at work on a table (internal): the vector column computed from the source column when
 * no row gives it (missing or null in every row, as 0.39; given in some rows only is refused) on createTable,
 * add and mergeInsert, the query vector of `search("text")`, and where a table
 * records its functions: the schema metadata key `embedding_functions` (as @lancedb/lancedb) and the same entry
 * on each vector field's metadata (which memwal's local tables keep; see the README for what persists where).
 */
import {
  Table as ArrowTable,
  type DataType,
  Field,
  FixedSizeList,
  Float,
  RecordBatch,
  Schema,
  Type,
  tableFromIPC,
  vectorFromArray,
} from "apache-arrow";
import { type Data, rowsToTable } from "../arrow";
import { invalid } from "../errors";
import { ourSchema, ourTable, ourType } from "../foreign";
import { type EmbeddingFunction, ensureInit } from "./embedding_function";
import {
  EMBEDDING_METADATA_KEY,
  type EmbeddingMetadataEntry,
  getRegistry,
  parseEmbeddingMetadata,
  type ResolvedEmbeddingFunctionConfig,
} from "./registry";

type Rows = ReadonlyArray<Record<string, unknown>>;

/** One function of a table: its columns, its recorded entry, and the function (made on first use). */
export interface Slot {
  sourceColumn: string;
  vectorColumn: string;
  fn: () => Promise<EmbeddingFunction>;
}

/** The functions `LanceSchema` put in a schema, kept as the caller's instances. */
export const schemaFunctions = new WeakMap<object, ResolvedEmbeddingFunctionConfig[]>();

/** `createTable`'s `embeddingFunction` option, checked; the vector column defaults to "vector". */
export function configOption(name: string, v: unknown): ResolvedEmbeddingFunctionConfig {
  const o = v as Record<string, unknown> | null;
  if (o === null || typeof o !== "object" || Array.isArray(o)) throw invalid(`${name} must be { function, sourceColumn, vectorColumn? }`);
  const fn = o.function as EmbeddingFunction | undefined;
  if (fn === null || typeof fn !== "object" || typeof fn.computeSourceEmbeddings !== "function")
    throw invalid(`${name}.function must be an EmbeddingFunction (with computeSourceEmbeddings)`);
  if (typeof o.sourceColumn !== "string" || o.sourceColumn === "") throw invalid(`${name}.sourceColumn must be a column name`);
  const vc = o.vectorColumn ?? "vector";
  if (typeof vc !== "string" || vc === "") throw invalid(`${name}.vectorColumn must be a column name`);
  if (vc === o.sourceColumn) throw invalid(`${name}: the vector column and the source column are both '${vc}'`);
  return { function: fn, sourceColumn: o.sourceColumn, vectorColumn: vc };
}

/** The entries a schema records: the schema-level key, else those on its vector fields. */
export function recordedEntries(schema: Schema): EmbeddingMetadataEntry[] {
  const top = schema.metadata.get(EMBEDDING_METADATA_KEY);
  if (top !== undefined) return parseEmbeddingMetadata(top);
  return schema.fields.flatMap((f) => {
    const j = f.metadata.get(EMBEDDING_METADATA_KEY);
    return j === undefined ? [] : parseEmbeddingMetadata(j);
  });
}

/** The slots of the functions `schema` records, each made from the registry on first use. */
export function recordedSlots(schema: Schema): Slot[] {
  return recordedEntries(schema).map(recordedSlot);
}

/** A slot making its function from the registry once. */
function recordedSlot(e: EmbeddingMetadataEntry): Slot {
  let made: Promise<EmbeddingFunction> | undefined;
  const make = async () => {
    const f = getRegistry().get(e.name);
    if (f === undefined)
      throw invalid(
        `Function "${e.name}" not found in registry: the table's embedding function '${e.name}' (${e.sourceColumn} -> ${e.vectorColumn}) is not registered in this process: register its class (@register("${e.name}")) first`,
      );
    return (await f.create(e.model)) as EmbeddingFunction;
  };
  return {
    sourceColumn: e.sourceColumn,
    vectorColumn: e.vectorColumn,
    fn: () => {
      made ??= make();
      made.catch(() => {
        made = undefined;
      });
      return made;
    },
  };
}

const givenSlot = (c: ResolvedEmbeddingFunctionConfig): Slot => ({
  sourceColumn: c.sourceColumn,
  vectorColumn: c.vectorColumn,
  fn: async () => {
    await ensureInit(c.function);
    return c.function;
  },
});

/** Turns what a function answered into `n` vectors of one length (`dims` when the column fixes it). */
function checkVectors(what: string, raw: unknown, n: number, dims?: number): number[][] {
  if (!Array.isArray(raw) || raw.length !== n)
    throw invalid(`${what} answered ${Array.isArray(raw) ? `${raw.length} vectors` : String(raw)} for ${n} values`);
  let size = dims;
  return raw.map((v, i) => {
    if (!(Array.isArray(v) || v instanceof Float32Array || v instanceof Float64Array))
      throw invalid(`${what}: vector ${i} is not an array of numbers`);
    const arr = Array.from(v as ArrayLike<unknown>, (x, j) => {
      if (typeof x !== "number" || !Number.isFinite(x))
        throw invalid(`${what}: vector ${i} holds ${String(x)} at ${j}; vectors must be finite numbers`);
      return x;
    });
    size ??= arr.length;
    if (arr.length !== size || size === 0)
      throw invalid(`${what}: vector ${i} has ${arr.length} dimensions, the ${dims === undefined ? "first" : "column"} ${size}`);
    return arr;
  });
}

/** The fixed size of a vector column's type, if it is a fixed-size list. */
function listSize(t: DataType | undefined): number | undefined {
  return t?.typeId === Type.FixedSizeList ? (t as FixedSizeList).listSize : undefined;
}

/** Embeds `values` (nulls stay null) with the slot's function; `dims` is the column's size when known. */
async function embedValues(
  slot: Slot,
  values: unknown[],
  dims?: number,
): Promise<{ vectors: Array<number[] | null>; fn: EmbeddingFunction }> {
  const fn = await slot.fn();
  const at = values.flatMap((v, i) => (v === null || v === undefined ? [] : [i]));
  const vectors: Array<number[] | null> = values.map(() => null);
  if (at.length === 0) return { vectors, fn };
  const raw = await fn.computeSourceEmbeddings(at.map((i) => values[i]));
  const what = `embedding function ${fn.constructor?.name ?? "?"} (${slot.sourceColumn} -> ${slot.vectorColumn})`;
  checkVectors(what, raw, at.length, dims).forEach((v, k) => {
    vectors[at[k]] = v;
  });
  return { vectors, fn };
}

/**
 * Checks that the vector column of `s` is given (non-null) in all `given` of `total` rows or in none: 0.39
 * computes a column only when no row gives it and stores null for the others, which memwal refuses.
 */
export function checkAllOrNone(s: { vectorColumn: string }, given: number, total: number): void {
  if (given > 0 && given < total)
    throw invalid(
      `the vector column '${s.vectorColumn}' is given in ${given} of ${total} rows: @lancedb/lancedb computes it only when no row gives it (and would store null for the others); give it in every row or in none`,
    );
}

/** The rows whose vector `s` computes: those with a source value, when no row gives the vector (else none). */
function rowsToEmbed(rows: Rows, s: Slot): number[] {
  const isRow = (r: unknown): r is Record<string, unknown> => r !== null && typeof r === "object";
  const given = rows.filter((r) => isRow(r) && r[s.vectorColumn] != null).length;
  checkAllOrNone(s, given, rows.length);
  return given > 0 ? [] : rows.flatMap((r, i) => (isRow(r) && r[s.sourceColumn] != null ? [i] : []));
}

/** Rows with the vector column filled where no row gives it (copies: the caller's rows are not changed). */
async function embedRows(rows: Rows, slots: Slot[], schema?: Schema): Promise<Rows> {
  let out: Array<Record<string, unknown>> | undefined;
  for (const s of slots) {
    const need = rowsToEmbed(rows, s);
    if (need.length === 0) continue;
    const dims = listSize(schema?.fields.find((f) => f.name === s.vectorColumn)?.type);
    const { vectors } = await embedValues(
      s,
      need.map((i) => rows[i][s.sourceColumn]),
      dims,
    );
    out ??= rows.map((r) => ({ ...r }));
    need.forEach((i, k) => {
      (out as Array<Record<string, unknown>>)[i][s.vectorColumn] = vectors[k];
    });
  }
  return out ?? rows;
}

/** The type of a new vector column: the table's, else `dims` values of the function's datatype. */
function vectorType(fn: EmbeddingFunction, dims: number | undefined, given?: DataType): DataType {
  if (given !== undefined) return given;
  const n = dims ?? fn.ndims();
  if (n === undefined)
    throw invalid(
      `cannot tell the size of the vector column: there are no rows and the embeddings function does not specify \`embeddingDimension\` (${fn.constructor?.name}.ndims() is unknown)`,
    );
  const item = ourType(fn.embeddingDataType());
  if (!(item instanceof Float)) throw invalid(`${fn.constructor?.name}.embeddingDataType() must be a float type, got ${item}`);
  return new FixedSizeList(n, new Field("item", item, true));
}

/** An Arrow table with the vector columns it lacks (or has all null) computed from their source columns. */
async function embedArrow(t: ArrowTable, slots: Slot[], schema?: Schema): Promise<ArrowTable | undefined> {
  let out: ArrowTable | undefined;
  for (const s of slots) {
    const cur = out ?? t;
    const src = cur.getChild(s.sourceColumn);
    const have = cur.getChild(s.vectorColumn);
    if (have !== null) checkAllOrNone(s, have.length - have.nullCount, have.length);
    if ((have !== null && (have.nullCount < have.length || have.length === 0)) || src === null) continue;
    const given = schema?.fields.find((f) => f.name === s.vectorColumn)?.type ?? have?.type;
    const values = Array.from({ length: cur.numRows }, (_, i) => src.get(i));
    const { vectors, fn } = await embedValues(s, values, listSize(given));
    const dims = vectors.find((v) => v !== null)?.length;
    const type = vectorType(fn, dims, given);
    out = cur.assign(new ArrowTable({ [s.vectorColumn]: vectorFromArray(vectors, type) }));
  }
  return out;
}

/** Data of any form as our Arrow table. */
function arrowOf(data: Data): ArrowTable {
  if (!(data instanceof Uint8Array)) return ourTable(data as ArrowTable);
  try {
    return tableFromIPC(data);
  } catch (e) {
    throw invalid(`data bytes are not Arrow IPC: ${(e as Error).message}`, e);
  }
}

/** `data` with every slot's missing vectors computed; `data` itself when nothing was missing. */
export async function embedData(data: Data, slots: Slot[], schema?: Schema): Promise<Data> {
  if (slots.length === 0) return data;
  if (Array.isArray(data)) return embedRows(data as Rows, slots, schema);
  return (await embedArrow(arrowOf(data), slots, schema)) ?? data;
}

/** `t` with the functions recorded: schema metadata and each vector field's metadata. */
export function withRecord(t: ArrowTable, entries: EmbeddingMetadataEntry[]): ArrowTable {
  const fields = t.schema.fields.map((f) => {
    const mine = entries.filter((e) => e.vectorColumn === f.name);
    if (mine.length === 0) return f;
    return new Field(f.name, f.type, f.nullable, new Map([...f.metadata, [EMBEDDING_METADATA_KEY, JSON.stringify(mine)]]));
  });
  const schema = new Schema(fields, new Map([...t.schema.metadata, [EMBEDDING_METADATA_KEY, JSON.stringify(entries)]]));
  return new ArrowTable(
    schema,
    t.batches.map((b) => new RecordBatch(schema, b.data)),
  );
}

/** The entries of `configs`: each function's registered name, else its class name (see `functionToMetadata`). */
export function entriesOf(configs: ResolvedEmbeddingFunctionConfig[]): EmbeddingMetadataEntry[] {
  return configs.map((c) => getRegistry().functionToMetadata(c) as EmbeddingMetadataEntry);
}

/** The functions a schema declares: `LanceSchema`'s instances, else those its metadata names. */
function schemaSlots(given: Schema | undefined, schema: Schema | undefined): Slot[] {
  const kept = given === undefined ? undefined : schemaFunctions.get(given);
  if (kept !== undefined) return kept.map(givenSlot);
  return schema === undefined ? [] : recordedEntries(schema).map(recordedSlot);
}

/** A table's functions as this process knows them: to compute with, and to record again. */
export interface Known {
  slots: Slot[];
  entries: EmbeddingMetadataEntry[];
}

/**
 * createTable's data with its vectors computed and its functions recorded, from the `embeddingFunction`
 * option and the functions of `schema` (LanceSchema's). Without functions, the data is untouched.
 */
export async function prepareCreate(
  data: Data,
  schema: Schema | undefined,
  option: ResolvedEmbeddingFunctionConfig | undefined,
): Promise<{ data: Data; known?: Known }> {
  const ours = schema === undefined ? undefined : ourSchema(schema);
  const other = (x: { vectorColumn: string }) => x.vectorColumn !== option?.vectorColumn;
  const recorded = ours === undefined ? [] : recordedEntries(ours).filter(other);
  if (option === undefined && recorded.length === 0) return { data };
  const known: Known = {
    slots: [...(option ? [givenSlot(option)] : []), ...schemaSlots(schema, ours).filter(other)],
    entries: [...(option ? entriesOf([option]) : []), ...recorded],
  };
  let table: ArrowTable;
  if (Array.isArray(data)) {
    table = await rowsTable(await embedRows(data as Rows, known.slots, ours), known.slots, ours);
  } else {
    const t = arrowOf(data);
    table = (await embedArrow(t, known.slots, ours)) ?? t;
  }
  return { data: withRecord(table, known.entries), known };
}

/**
 * Embedded rows as an Arrow table: the vector columns typed as the schema or the function says, the columns in
 * the schema's order, then in the rows' (as without embedding functions).
 */
async function rowsTable(rows: Rows, slots: Slot[], schema: Schema | undefined): Promise<ArrowTable> {
  const t = rowsToTable(rows, await rowSchema(rows, slots, schema));
  if (rows.length === 0) return t;
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const declared = (schema?.fields ?? []).map((f) => f.name);
  return t.select([...declared.filter((n) => keys.includes(n)), ...keys.filter((k) => !declared.includes(k))]);
}

/** The schema rows are converted with: the given one plus each missing vector column's type. */
async function rowSchema(rows: Rows, slots: Slot[], schema: Schema | undefined): Promise<Schema | undefined> {
  const fields = [...(schema?.fields ?? [])];
  for (const s of slots) {
    if (fields.some((f) => f.name === s.vectorColumn)) continue;
    const first = rows.find((r) => Array.isArray(r[s.vectorColumn]))?.[s.vectorColumn] as number[] | undefined;
    fields.push(new Field(s.vectorColumn, vectorType(await s.fn(), first?.length), true));
  }
  return fields.length === 0 ? undefined : new Schema(fields, schema?.metadata);
}

/**
 * A table's functions: those this process knows (`known`: it created the table), else those its schema records
 * (read once per handle). Computes missing vectors of writes and the vector of a text query.
 */
export class TableEmbeddings {
  #read?: Promise<Known>;

  constructor(
    private readonly schema: () => Promise<Schema>,
    readonly known?: Known,
  ) {}

  /** The table's functions (none: empty lists). */
  functions(): Promise<Known> {
    if (this.known !== undefined) return Promise.resolve(this.known);
    this.#read ??= this.schema().then((s) => {
      const entries = recordedEntries(s);
      return { entries, slots: entries.map(recordedSlot) };
    });
    this.#read.catch(() => {
      this.#read = undefined;
    });
    return this.#read;
  }

  /** `data` with its missing vectors computed (`data` itself when the table has no function or none is missing). */
  async embed(data: Data, schema?: Schema): Promise<Data> {
    const { slots } = await this.functions();
    if (slots.length === 0) return data;
    return embedData(data, slots, schema ?? (await this.schema()));
  }

  /** `data` (replacing the table's rows and schema) with its vectors computed and the functions recorded again. */
  async embedOverwrite(data: Data): Promise<Data> {
    const { slots, entries } = await this.functions();
    if (slots.length === 0) return data;
    const embedded = await embedData(data, slots);
    const t = Array.isArray(embedded) ? await rowsTable(embedded as Rows, slots, undefined) : arrowOf(embedded);
    return withRecord(t, entries);
  }

  /** Whether the table has an embedding function (`search(text)` embeds, else searches full text). */
  async hasFunctions(): Promise<boolean> {
    return (await this.functions()).slots.length > 0;
  }

  /** The query vector of `text` and the column to search, for `search(text)` (`column` when the query names one). */
  async queryVector(text: string, column?: string): Promise<{ vector: number[]; column: string }> {
    const { slots } = await this.functions();
    const s = column === undefined ? slots[0] : slots.find((x) => x.vectorColumn === column);
    if (s === undefined) {
      const has = slots.length === 0 ? "has no embedding function" : `has none for column '${column}'`;
      // 0.39's text first when the table has none at all.
      const lead = slots.length === 0 ? "No embedding functions are defined in the table: " : "";
      throw invalid(`${lead}search(query) got text, but the table ${has} to embed it; pass a vector, or search full text`);
    }
    const fn = await s.fn();
    const [v] = checkVectors(`embedding function ${fn.constructor?.name ?? "?"} (query)`, [await fn.computeQueryEmbeddings(text)], 1);
    return { vector: v, column: s.vectorColumn };
  }
}
