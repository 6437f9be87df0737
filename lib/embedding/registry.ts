/**
 * The embedding function registry, as @lancedb/lancedb 0.39's: classes registered by name (`@register("name")`
 * on the class, or `getRegistry().register("name")(Class)`), made again from a table's recorded options, and the
 * `embedding_functions` metadata entry (a JSON list of `{ name, sourceColumn, vectorColumn, model }`) written
 * for and read from a table.
 */
import { invalid, notSupported } from "../errors";
import {
  type EmbeddingFunction,
  type EmbeddingFunctionConstructor,
  ensureInit,
  type FunctionOptions,
  recordOptions,
  registryVars,
} from "./embedding_function";

/** `create` answers a promise when the function has an `init()` to run first. */
export type CreateReturnType<T> = T extends { init: () => Promise<void> } ? Promise<T> : T;

/** What `registry.get(name)` answers: a way to make the function from its options. */
export interface EmbeddingFunctionCreate<T extends EmbeddingFunction> {
  create(options?: T["TOptions"]): CreateReturnType<T>;
}

/** An embedding function bound to its columns (the `embeddingFunction` option of `createTable`). */
export interface EmbeddingFunctionConfig {
  sourceColumn: string;
  /** Default `"vector"`. */
  vectorColumn?: string;
  function: EmbeddingFunction;
}

/** A config read back from a table, where the vector column is always recorded. */
export type ResolvedEmbeddingFunctionConfig = EmbeddingFunctionConfig & { vectorColumn: string };

/** One entry of the `embedding_functions` schema metadata. */
export type EmbeddingMetadataEntry = {
  name: string;
  sourceColumn: string;
  vectorColumn: string;
  model: EmbeddingFunction["TOptions"];
};

/** The schema metadata key of a table's embedding functions (as @lancedb/lancedb). */
export const EMBEDDING_METADATA_KEY = "embedding_functions";

/** Providers of @lancedb/lancedb 0.39 that memwal refuses, by registered name, and why. */
const REFUSED: Record<string, string> = {
  huggingface: "it downloads and runs transformer models in process (@huggingface/transformers)",
  transformers: "it downloads and runs transformer models in process (@huggingface/transformers)",
};

/** A string field of a metadata entry under either spelling (camelCase or the Python binding's snake_case). */
function entryField(o: Record<string, unknown>, camel: string, snake: string, i: number): string {
  const v = o[camel] ?? o[snake];
  if (typeof v !== "string" || v === "") throw invalid(`embedding_functions[${i}] has no ${camel} (a non-empty string)`);
  return v;
}

/** Parses `embedding_functions` schema metadata: every reader goes through here. */
export function parseEmbeddingMetadata(json: string): EmbeddingMetadataEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw invalid(`embedding_functions metadata is not JSON: ${(e as Error).message}`, e);
  }
  if (!Array.isArray(parsed))
    throw invalid("embedding_functions metadata must be a JSON list of { name, sourceColumn, vectorColumn, model }");
  return parsed.map((x, i) => {
    if (x === null || typeof x !== "object" || Array.isArray(x)) throw invalid(`embedding_functions[${i}] is not an object`);
    const o = x as Record<string, unknown>;
    const model = o.model ?? {};
    if (model === null || typeof model !== "object" || Array.isArray(model))
      throw invalid(`embedding_functions[${i}].model is not an object`);
    return {
      name: entryField(o, "name", "name", i),
      sourceColumn: entryField(o, "sourceColumn", "source_column", i),
      vectorColumn: entryField(o, "vectorColumn", "vector_column", i),
      model: model as FunctionOptions,
    };
  });
}

/** A class decorator of either kind (TypeScript's legacy one gets the class; a standard one also a context). */
type ClassDecorator = (ctor: EmbeddingFunctionConstructor, context?: unknown) => EmbeddingFunctionConstructor;

/**
 * The singleton that registers embedding functions by name, makes them from options and reads and writes a
 * table's `embedding_functions` metadata.
 */
export class EmbeddingFunctionRegistry {
  readonly #functions = new Map<string, EmbeddingFunctionConstructor>();
  readonly #builtIn = new Map<string, EmbeddingFunctionConstructor>();
  readonly #names = new WeakMap<object, string>();

  /** The number of registered functions. */
  length(): number {
    return this.#functions.size;
  }

  /** A class decorator registering the class under `alias` (default: the class name); a taken name throws. */
  register<T extends EmbeddingFunctionConstructor = EmbeddingFunctionConstructor>(
    this: EmbeddingFunctionRegistry,
    alias?: string,
    // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's register: the decorated class.
  ): (ctor: T) => any {
    const decorate: ClassDecorator = (ctor) => {
      if (typeof ctor !== "function") throw invalid("register(name) decorates a class of embedding function");
      const name = alias ?? ctor.name;
      if (typeof name !== "string" || name === "") throw invalid("register(name): the name must be a non-empty string");
      if (this.#functions.has(name)) throw invalid(`Embedding function with alias "${name}" already exists in the registry`);
      return this.#add(name, ctor);
    };
    return decorate as (ctor: T) => EmbeddingFunctionConstructor;
  }

  /** @ignore Registers a built-in provider (kept by `reset()`). */
  setBuiltIn<T extends EmbeddingFunctionConstructor = EmbeddingFunctionConstructor>(name: string, ctor: T): T {
    this.#builtIn.set(name, ctor);
    return this.#add(name, ctor) as T;
  }

  /** Records `ctor` under `name`; the class answered records each instance's options for `toJSON()`. */
  #add(name: string, ctor: EmbeddingFunctionConstructor): EmbeddingFunctionConstructor {
    const Recording = class extends (ctor as unknown as new (o?: unknown) => object) {
      constructor(options?: unknown) {
        super(options);
        recordOptions(this, options ?? {});
      }
    };
    Object.defineProperty(Recording, "name", { value: ctor.name });
    const made = Recording as unknown as EmbeddingFunctionConstructor;
    this.#functions.set(name, made);
    this.#names.set(ctor, name);
    this.#names.set(made, name);
    return made;
  }

  /** How to make the function registered as `name` (undefined if none); a refused provider is a NotSupportedError. */
  get<T extends EmbeddingFunction<unknown>>(name: string): EmbeddingFunctionCreate<T> | undefined {
    const ctor = this.#functions.get(name);
    if (ctor === undefined) {
      if (name in REFUSED) throw notSupported(`the '${name}' embedding provider is not supported by memwal: ${REFUSED[name]}`);
      return undefined;
    }
    return {
      create: (options?: T["TOptions"]) => {
        const fn = new ctor(options) as unknown as T;
        recordOptions(fn, options ?? {});
        return (typeof fn.init === "function" ? ensureInit(fn).then(() => fn) : fn) as CreateReturnType<T>;
      },
    };
  }

  /** Resets the registry: only the built-in providers stay; variables are cleared. */
  reset(this: EmbeddingFunctionRegistry): void {
    this.#functions.clear();
    for (const [n, c] of this.#builtIn) this.#functions.set(n, c);
    registryVars.clear();
  }

  /** @ignore The functions recorded in schema metadata, made from their options, by vector column. */
  async parseFunctions(
    this: EmbeddingFunctionRegistry,
    metadata: Map<string, string>,
  ): Promise<Map<string, ResolvedEmbeddingFunctionConfig>> {
    const out = new Map<string, ResolvedEmbeddingFunctionConfig>();
    const json = metadata.get(EMBEDDING_METADATA_KEY);
    if (json === undefined) return out;
    for (const e of parseEmbeddingMetadata(json)) {
      const f = this.get(e.name);
      if (f === undefined)
        throw invalid(
          `Function "${e.name}" not found in registry: the table's embedding function '${e.name}' (${e.sourceColumn} -> ${e.vectorColumn}) is not registered in this process: register it (@register("${e.name}")) before using the table`,
        );
      const fn = await f.create(e.model);
      out.set(e.vectorColumn, { sourceColumn: e.sourceColumn, vectorColumn: e.vectorColumn, function: fn });
    }
    return out;
  }

  /**
   * The metadata entry of one config: the function's registered name, else (as 0.39) its class name, and its
   * `toJSON()` options. An unregistered instance is still used as given by the table made with it; only making
   * it again from the entry (another connection or process) needs the registry, and says so. Refused: a class
   * without a name, and one named as another class is registered (reopening would make that other class).
   */
  // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's functionToMetadata.
  functionToMetadata(conf: EmbeddingFunctionConfig): Record<string, any> {
    const fn = conf.function;
    let name: string | undefined;
    for (let p = Object.getPrototypeOf(fn); p !== null && name === undefined; p = Object.getPrototypeOf(p))
      name = this.#names.get(p.constructor);
    if (name === undefined) name = this.#unregisteredName(fn);
    if (typeof fn.toJSON !== "function")
      throw invalid(`embedding function ${name} has no toJSON() (extend EmbeddingFunction): the table records its options`);
    return { sourceColumn: conf.sourceColumn, vectorColumn: conf.vectorColumn ?? "vector", name, model: fn.toJSON() };
  }

  /** The name recorded for an instance of an unregistered class: its class name, when that cannot mislead. */
  #unregisteredName(fn: EmbeddingFunction): string {
    const name: unknown = fn?.constructor?.name;
    if (fn?.constructor === Object)
      throw invalid("embedding function: a plain object is not an instance of an EmbeddingFunction class, which the table records by name");
    if (typeof name !== "string" || name === "")
      throw invalid(
        `embedding function ${String(fn)}: its class has no name and is not registered, so the table could not record it: register the class (@register("name"))`,
      );
    if (this.#functions.has(name))
      throw invalid(
        `embedding function class ${name} is not registered, and the name '${name}' is registered to another class: a table recording it would make that other class when reopened; register ${name} under a name of its own (@register("name"))`,
      );
    return name;
  }

  /** The schema metadata recording `functions`. */
  getTableMetadata(functions: EmbeddingFunctionConfig[]): Map<string, string> {
    return new Map([[EMBEDDING_METADATA_KEY, JSON.stringify(functions.map((f) => this.functionToMetadata(f)))]]);
  }

  /** Sets a variable, read in options as `$var:name` (or `$var:name:default`). The name must not hold colons. */
  setVar(name: string, value: string): void {
    if (typeof name !== "string" || name === "" || name.includes(":"))
      throw invalid(`setVar(name) must be a non-empty string without colons, got ${JSON.stringify(name)}`);
    if (typeof value !== "string") throw invalid(`setVar(value) must be a string, got ${typeof value}`);
    registryVars.set(name, value);
  }

  /** A variable's value (see {@link setVar}). */
  getVar(name: string): string | undefined {
    return registryVars.get(name);
  }
}

const REGISTRY = new EmbeddingFunctionRegistry();
/** Built-in providers, added on the registry's first use. */
const builtIns: Array<[string, EmbeddingFunctionConstructor]> = [];
let builtInsAdded = false;

/** @ignore Queues a built-in provider for the registry. */
export function registerBuiltIn<T extends EmbeddingFunctionConstructor = EmbeddingFunctionConstructor>(name: string, ctor: T): T {
  if (builtInsAdded) REGISTRY.setBuiltIn(name, ctor);
  else builtIns.push([name, ctor]);
  return ctor;
}

/** The global registry (its built-in providers added on first use). */
export function getRegistry(): EmbeddingFunctionRegistry {
  if (!builtInsAdded) {
    builtInsAdded = true;
    for (const [n, c] of builtIns) REGISTRY.setBuiltIn(n, c);
  }
  return REGISTRY;
}

/** Registers the decorated class under `name` in the global registry. */
export function register(
  name?: string,
  // biome-ignore lint/suspicious/noExplicitAny: as @lancedb/lancedb 0.39's register: the decorated class.
): (ctor: EmbeddingFunctionConstructor<EmbeddingFunction<any, FunctionOptions>>) => any {
  return getRegistry().register(name);
}
