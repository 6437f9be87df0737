/**
 * Index configs with the names of @lancedb/lancedb 0.39 (`Index.ivfPq(...)`, `Index.ivfFlat(...)`, ...), the
 * options of `createIndex`, and what `listIndices` / `indexStats` report. memwal builds IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ, BTREE,
 * BITMAP and FTS;
 * the other configs exist so that ported code compiles, and `createIndex` with one of them is a
 * NotSupportedError naming the type.
 */
import { bool, count, optStr, strList } from "./args";
import { invalid, notSupported } from "./errors";
import type { NativeIndexOptions } from "./native";
import type { DistanceType } from "./query";

/** IVF parameters shared by every IVF index. */
export interface IvfOptions {
  /** Partitions (about sqrt(rows) when omitted). */
  numPartitions: number;
  /** Rows per partition wanted, instead of `numPartitions`. */
  targetPartitionSize: number;
  /** Distance the index ranks by (l2 when omitted). */
  distanceType: DistanceType;
  /** k-means iterations (50). */
  maxIterations: number;
  /** Training rows per partition (256). */
  sampleRate: number;
}

/** IVF_PQ parameters. */
export interface IvfPqOptions extends IvfOptions {
  /** Sub-vectors per vector (dimension / 16, or / 8). Must divide the dimension. */
  numSubVectors: number;
  /** Bits per code: 8 (default) or 4. */
  numBits: number;
}

/** IVF_FLAT parameters. */
export type IvfFlatOptions = IvfOptions;

/** HNSW parameters (memwal does not build HNSW indexes yet). */
export interface HnswOptions extends IvfOptions {
  m: number;
  efConstruction: number;
  numSubVectors: number;
}

const KEYS: Record<string, keyof NativeIndexOptions> = {
  numPartitions: "numPartitions",
  targetPartitionSize: "targetPartitionSize",
  maxIterations: "maxIterations",
  sampleRate: "sampleRate",
  numSubVectors: "numSubVectors",
  numBits: "numBits",
  m: "m",
  efConstruction: "efConstruction",
};

function config(kind: string, allowed: string[], options: unknown): NativeIndexOptions {
  const out: NativeIndexOptions = { indexType: kind };
  if (options === undefined || options === null) return out;
  if (typeof options !== "object") throw invalid(`Index options for ${kind} must be an object, got ${String(options)}`);
  for (const [k, v] of Object.entries(options as Record<string, unknown>)) {
    if (v === undefined) continue;
    if (k === "distanceType" && allowed.includes(k)) {
      out.distanceType = optStr(`${kind} distanceType`, v);
      continue;
    }
    const key = KEYS[k];
    if (key === undefined || !allowed.includes(k)) {
      throw invalid(`unknown option ${JSON.stringify(k)} for ${kind} (it takes ${allowed.join(", ") || "none"})`);
    }
    (out as Record<string, unknown>)[key] = count(`${kind} ${k}`, v, 0xffff_ffff);
  }
  return out;
}

const IVF = ["numPartitions", "targetPartitionSize", "distanceType", "maxIterations", "sampleRate"];

/** Options of `Index.ivfRq`, as 0.39's `IvfRqOptions`. */
export interface IvfRqOptions {
  numPartitions: number;
  /** Bits per dimension of the rotated residual, 1 (the default: its signs) to 9; more bits, closer estimates. */
  numBits: number;
  distanceType: DistanceType;
  maxIterations: number;
  sampleRate: number;
}

/** An index config for `createIndex(column, { config })`. */
export class Index {
  private constructor(
    /** @internal The addon's options (createIndex reads them). */
    readonly native: NativeIndexOptions,
  ) {}

  /** IVF partitions of product-quantised vectors: the default for a vector column. */
  static ivfPq(options?: Partial<IvfPqOptions>): Index {
    return new Index(config("IVF_PQ", [...IVF, "numSubVectors", "numBits"], options));
  }
  /** IVF partitions holding the vectors themselves (exact within the probed partitions). */
  static ivfFlat(options?: Partial<IvfFlatOptions>): Index {
    return new Index(config("IVF_FLAT", IVF, options));
  }
  /** HNSW graphs over scalar-quantised vectors (one graph unless `numPartitions` asks for IVF partitions). */
  static hnswSq(options?: Partial<HnswOptions>): Index {
    return new Index(config("IVF_HNSW_SQ", [...IVF, "m", "efConstruction"], options));
  }
  /** HNSW over product-quantised vectors (not built by memwal yet). */
  static hnswPq(options?: Partial<HnswOptions>): Index {
    return new Index(config("IVF_HNSW_PQ", [...IVF, "m", "efConstruction", "numSubVectors"], options));
  }
  /**
   * IVF partitions of RaBitQ-quantised vectors (0.39's `Index.ivfRq`): each row's residual to its centroid, turned
   * by a random rotation, kept as `numBits` bits per dimension plus two floats. Search with `refineFactor` to
   * re-rank its estimates exactly (one bit orders rows roughly; see the README's IVF_RQ figures).
   */
  static ivfRq(options?: Partial<IvfRqOptions>): Index {
    return new Index(config("IVF_RQ", ["numPartitions", "numBits", "distanceType", "maxIterations", "sampleRate"], options));
  }
  /** As 0.39's `Index.fm` (an FM-index for substring search): not built by memwal, refused by `createIndex`. */
  static fm(): Index {
    return new Index({ indexType: "FM" });
  }
  /** A B-tree over a scalar column (not built by memwal yet). */
  static btree(): Index {
    return new Index({ indexType: "BTREE" });
  }
  /**
   * Lance's index for a low-cardinality scalar column. memwal builds it with its BTREE's structure (sorted values and
   * row ids: exact, used by `=`, `IN` and range filters), not as Lance's per-value bitmaps; listed as `Bitmap`.
   */
  static bitmap(): Index {
    return new Index({ indexType: "BITMAP" });
  }
  /** A label-list index over a list column (not built by memwal yet). */
  static labelList(): Index {
    return new Index({ indexType: "LABEL_LIST" });
  }
  /**
   * A full-text (inverted) index over a string column, as 0.39's `Index.fts`: BM25-scored `fullTextSearch`, phrase
   * queries when `withPosition` is true. Options are checked by the same reader as the server's `create_index/`.
   */
  static fts(options?: Partial<FtsOptions>): Index {
    return new Index({ indexType: "FTS", ftsParams: JSON.stringify(ftsParams(options)) });
  }
}

/** Options of `Index.fts` (0.39's `FtsOptions`). */
export interface FtsOptions {
  /** Store token positions (needed by phrase queries). Default false. */
  withPosition: boolean;
  /** `simple` (default), `whitespace`, `raw` or `ngram`. */
  baseTokenizer: string;
  /** Stemmer and stop-word language (`English`). */
  language: string;
  /** Longer tokens are dropped (40). */
  maxTokenLength: number;
  /** Lower-case tokens (true). */
  lowercase: boolean;
  /** Alias of `lowercase`. */
  lowerCase: boolean;
  /** Stem tokens (true). */
  stem: boolean;
  /** Drop stop words (true). */
  removeStopWords: boolean;
  /** Stop words replacing the language's list. */
  customStopWords: string[];
  /** Fold accents to ASCII (true). */
  asciiFolding: boolean;
  /** Shortest n-gram of the `ngram` tokenizer (3). */
  ngramMinLength: number;
  /** Longest n-gram of the `ngram` tokenizer (3). */
  ngramMaxLength: number;
  /** Only n-grams starting a word (false). */
  prefixOnly: boolean;
  /**
   * Documents per posting block, 128 (the default) or 256 (Lance's FTS format V3: `listIndices` reports
   * `indexVersion` 3): the unit of the block-max pruning that lets a limited query skip most matching rows.
   */
  blockSize: 128 | 256;
}

const FTS_KEYS: Record<string, [string, "bool" | "str" | "count" | "strs"]> = {
  withPosition: ["with_position", "bool"],
  baseTokenizer: ["base_tokenizer", "str"],
  language: ["language", "str"],
  maxTokenLength: ["max_token_length", "count"],
  lowercase: ["lower_case", "bool"],
  lowerCase: ["lower_case", "bool"],
  stem: ["stem", "bool"],
  removeStopWords: ["remove_stop_words", "bool"],
  customStopWords: ["custom_stop_words", "strs"],
  asciiFolding: ["ascii_folding", "bool"],
  ngramMinLength: ["min_ngram_length", "count"],
  ngramMaxLength: ["max_ngram_length", "count"],
  prefixOnly: ["prefix_only", "bool"],
};

/** `blockSize` (Lance's posting block size): 128 or 256, else 0.39's text. */
function blockSize(v: unknown): number {
  if (v !== 128 && v !== 256) throw invalid(`FTS inverted index block_size must be one of 128 or 256, got ${String(v)}`);
  return v;
}

/** The wire's parameters of an FTS index (only those given). */
export function ftsParams(options: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (options === undefined || options === null) return out;
  if (typeof options !== "object") throw invalid(`Index options for FTS must be an object, got ${String(options)}`);
  for (const [k, v] of Object.entries(options as Record<string, unknown>)) {
    if (v === undefined) continue;
    if (k === "blockSize") {
      out.block_size = blockSize(v);
      continue;
    }
    const spec = FTS_KEYS[k];
    if (spec === undefined) throw invalid(`unknown option ${JSON.stringify(k)} for FTS (it takes ${Object.keys(FTS_KEYS).join(", ")})`);
    const [wire, kind] = spec;
    const name = `FTS ${k}`;
    if (kind === "bool") out[wire] = bool(name, v);
    else if (kind === "str") out[wire] = optStr(name, v);
    else if (kind === "count") out[wire] = count(name, v, 0xffff_ffff);
    else out[wire] = strList(name, v);
  }
  return out;
}

/** Options of `createIndex`. */
export interface IndexOptions {
  /** The index (Index.ivfPq() for a vector column when omitted). */
  config?: Index;
  /** Replace an index of the same name or column (default true). */
  replace?: boolean;
  /** The index name (`{column}_idx` when omitted). */
  name?: string;
  /** Accepted for compatibility: memwal builds the index before createIndex returns. */
  waitTimeoutSeconds?: number;
  /**
   * As 0.39's: train the index on the rows present (true, the default and what memwal always does). `false` (an
   * empty index that `optimize` fills later) is refused as not supported.
   */
  train?: boolean;
}

/** The native options of `createIndex(column, options)`. */
export function indexOptions(options: IndexOptions | undefined): NativeIndexOptions {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") throw invalid(`createIndex(options) must be an object, got ${String(options)}`);
  const known = ["config", "replace", "name", "waitTimeoutSeconds", "train"];
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw invalid(`unknown createIndex option ${JSON.stringify(k)} (it takes ${known.join(", ")})`);
  }
  if (options.config !== undefined && !(options.config instanceof Index)) {
    throw invalid("createIndex(options.config) must be made by Index.ivfPq(), Index.ivfFlat(), ...");
  }
  if (options.waitTimeoutSeconds !== undefined) count("createIndex(options.waitTimeoutSeconds)", options.waitTimeoutSeconds);
  if (options.train !== undefined && !bool("createIndex(options.train)", options.train)) {
    throw notSupported(
      "createIndex(options.train = false) is not supported by memwal: an index is always trained on the rows present (an empty index filled by optimize is not built)",
    );
  }
  return {
    ...(options.config?.native ?? {}),
    name: optStr("createIndex(options.name)", options.name),
    replace: options.replace === undefined ? undefined : bool("createIndex(options.replace)", options.replace),
  };
}

/** An index as `listIndices` reports it. */
export interface IndexConfig {
  name: string;
  /** `IvfPq`, `IvfFlat`, `BTree`, `FTS` (0.39's spelling). */
  indexType: string;
  columns: string[];
  /** The uuid its first segment's files were written under (a rebuild changes it). */
  indexUuid?: string;
  /** When it was built (undefined for indexes built before memwal recorded it). */
  createdAt?: Date;
  /** Bytes of its files. */
  sizeBytes?: number;
  /** Separately written parts: an FTS index gains one per `optimize()` that adds rows; other kinds have one. */
  numSegments?: number;
  /** Its parameters as built (e.g. `num_partitions`, the FTS tokenizer options); text that is not JSON as is. */
  indexDetails?: Record<string, unknown> | string;
  /** Lance's format version of the index where memwal's answers it (FTS 2, or 3 with `blockSize: 256`; vector 1). */
  indexVersion?: number;
}

/** What `indexStats` reports. */
export interface IndexStatistics {
  /** Live rows the index holds. */
  numIndexedRows: number;
  /** Live rows it does not hold yet (searched exactly; `optimize()` adds them). */
  numUnindexedRows: number;
  indexType: string;
  distanceType?: string;
  /** Index segments (1). */
  numIndices?: number;
}
