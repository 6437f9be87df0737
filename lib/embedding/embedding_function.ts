/**
 * `EmbeddingFunction` and `TextEmbeddingFunction`, with the names and signatures of @lancedb/lancedb 0.39's
 * `@lancedb/lancedb/embedding`: a function turns values of a source column into vectors of a vector column,
 * `sourceField()` / `vectorField()` declare those columns for `LanceSchema`, and `toJSON()` gives the
 * constructor options recorded with the table so the function can be made again when the table is reopened.
 * Options may name registry variables (`$var:name` or `$var:name:default`); sensitive options must.
 */
import { type DataType, Field, FixedSizeList, Float, Float32, Utf8 } from "apache-arrow";
import { invalid } from "../errors";
import { ourType } from "../foreign";

/** Options for a given embedding function. */
export interface FunctionOptions {
  // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's FunctionOptions, any option value.
  [key: string]: any;
}

/** What a class of embedding function is: constructed from its options. */
export interface EmbeddingFunctionConstructor<T extends EmbeddingFunction = EmbeddingFunction> {
  new (modelOptions?: T["TOptions"]): T;
}

/** The datatype (and dimensions, for a vector field) of a field declared by `sourceField` / `vectorField`. */
export interface FieldOptions<T extends DataType = DataType> {
  datatype: T;
  dims?: number;
}

/** A query vector as an embedding function answers it. */
export type EmbeddingVector = number[] | Float32Array | Float64Array;

/** Registry variables (`getRegistry().setVar`), here so that functions resolve them without importing the registry. */
export const registryVars = new Map<string, string>();

/** The options each function was made with (toJSON's answer), recorded by the registry or by resolveVariables. */
const originalOptions = new WeakMap<object, Record<string, unknown>>();
/** Each function's init(), run once. */
const initialized = new WeakMap<object, Promise<void>>();

/** Records the options `fn` was constructed with (the first record wins: the caller's raw options). */
export function recordOptions(fn: object, options: unknown): void {
  if (originalOptions.has(fn)) return;
  if (options !== null && typeof options === "object" && !Array.isArray(options)) originalOptions.set(fn, { ...options });
}

/** Runs `fn.init()` once (if it has one) before its first embedding. */
export function ensureInit(fn: EmbeddingFunction<unknown>): Promise<void> {
  let p = initialized.get(fn);
  if (p === undefined) {
    p = typeof fn.init === "function" ? fn.init() : Promise.resolve();
    initialized.set(fn, p);
    // A failed init is tried again next time rather than remembered.
    p.catch(() => initialized.delete(fn));
  }
  return p;
}

const isDataType = (x: unknown): x is DataType =>
  typeof x === "object" && x !== null && typeof (x as { typeId?: unknown }).typeId === "number";

/** Reads `$var:name` or `$var:name:default` (the default may hold colons). */
function resolveVar(key: string, value: string): string {
  const rest = value.slice("$var:".length);
  const at = rest.indexOf(":");
  const name = at < 0 ? rest : rest.slice(0, at);
  const found = registryVars.get(name);
  if (found !== undefined) return found;
  if (at >= 0) return rest.slice(at + 1);
  throw invalid(`Variable "${name}" not found (embedding option '${key}' names it): call getRegistry().setVar("${name}", value)`);
}

/**
 * An embedding function that automatically creates vector representation for a given column. Subclasses pass
 * their raw options to `resolveVariables` (which records them for `toJSON`) and use what it returns.
 */
// biome-ignore lint/suspicious/noExplicitAny: the default value type of @lancedb/lancedb 0.39's EmbeddingFunction.
export abstract class EmbeddingFunction<T = any, M extends FunctionOptions = FunctionOptions> {
  /** @ignore Only associates the options type with the class, for type checking. */
  declare readonly TOptions: M;

  /** The original constructor options, to record with a table so that the function can be made again. */
  // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's toJSON.
  toJSON(): Record<string, any> {
    return { ...(originalOptions.get(this) ?? {}) };
  }

  /** Keys of the options that are secrets: they must be given as `$var:name`, never raw. */
  protected getSensitiveKeys(): string[] {
    return [];
  }

  /**
   * Resolves `$var:` references in `config` against the registry's variables; a raw value for a sensitive key is
   * an InvalidInputError. The raw config is what `toJSON()` answers.
   */
  protected resolveVariables(config: Partial<M>): Partial<M> {
    recordOptions(this, config ?? {});
    const sensitive = this.getSensitiveKeys();
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config ?? {})) {
      const isVar = typeof v === "string" && v.startsWith("$var:");
      if (sensitive.includes(k) && v !== undefined && !isVar)
        throw invalid(
          `The key "${k}" is sensitive and cannot be set directly. Please use the $var: syntax to set it. (It would be stored with the table: pass "$var:name" and call getRegistry().setVar("name", value).)`,
        );
      out[k] = isVar ? resolveVar(k, v) : v;
    }
    return out as Partial<M>;
  }

  /** Optionally loads resources; called once before the function's first embedding. */
  init?(): Promise<void>;

  /** Declares the source column for `LanceSchema`: its datatype (or `{ datatype }`). */
  sourceField(optionsOrDatatype: Partial<FieldOptions> | DataType): [DataType, Map<string, EmbeddingFunction>] {
    const dt = isDataType(optionsOrDatatype) ? optionsOrDatatype : optionsOrDatatype?.datatype;
    if (!isDataType(dt)) throw invalid("sourceField() needs the source column's datatype (a DataType or { datatype })");
    return [ourType(dt), new Map<string, EmbeddingFunction>([["source", this]])];
  }

  /**
   * Declares the vector column for `LanceSchema`: a fixed-size list of `embeddingDataType()` with `ndims()`
   * values, unless `{ datatype, dims }` (or a DataType) says otherwise.
   */
  vectorField(optionsOrDatatype?: Partial<FieldOptions> | DataType): [DataType, Map<string, EmbeddingFunction>] {
    const opts: Partial<FieldOptions> = isDataType(optionsOrDatatype) ? { datatype: optionsOrDatatype } : (optionsOrDatatype ?? {});
    const given = opts.datatype === undefined ? undefined : ourType(opts.datatype);
    const mark = new Map<string, EmbeddingFunction>([["vector", this]]);
    if (given instanceof FixedSizeList) return [given, mark];
    const item = given ?? ourType(this.embeddingDataType());
    if (!(item instanceof Float))
      throw invalid(`vectorField(): the datatype must be a float type or a FixedSizeList of floats, got ${item}`);
    const dims = opts.dims ?? this.ndims();
    if (dims === undefined || !Number.isInteger(dims) || dims <= 0)
      throw invalid(`vectorField(): the embedding function's dimensions are unknown (ndims() is ${dims}); pass { dims }`);
    return [new FixedSizeList(dims, new Field("item", item, true)), mark];
  }

  /** The number of dimensions of the embeddings (undefined when only the first embedding tells). */
  ndims(): number | undefined {
    return undefined;
  }

  /** The datatype of the embeddings. */
  abstract embeddingDataType(): Float;

  /** Creates a vector representation for the given values. */
  abstract computeSourceEmbeddings(data: T[]): Promise<number[][] | Float32Array[] | Float64Array[]>;

  /** Computes the embedding of a single query. */
  async computeQueryEmbeddings(data: T): Promise<EmbeddingVector> {
    const [v] = await this.computeSourceEmbeddings([data]);
    return v;
  }
}

/** An embedding function of text: implement `generateEmbeddings(texts)`. */
export abstract class TextEmbeddingFunction<M extends FunctionOptions = FunctionOptions> extends EmbeddingFunction<string, M> {
  // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's generateEmbeddings.
  abstract generateEmbeddings(texts: string[], ...args: any[]): Promise<number[][] | Float32Array[] | Float64Array[]>;

  async computeQueryEmbeddings(data: string): Promise<EmbeddingVector> {
    const [v] = await this.generateEmbeddings([data]);
    return v;
  }

  embeddingDataType(): Float {
    return new Float32();
  }

  sourceField(): [DataType, Map<string, EmbeddingFunction>] {
    return super.sourceField(new Utf8());
  }

  computeSourceEmbeddings(data: string[]): Promise<number[][] | Float32Array[] | Float64Array[]> {
    return this.generateEmbeddings(data);
  }
}
