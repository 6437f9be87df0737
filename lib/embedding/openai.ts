/**
 * The `openai` provider (registered as in @lancedb/lancedb 0.39): embeddings from any OpenAI-compatible
 * `POST {baseURL}/embeddings` endpoint, called with `fetch` (no SDK). Options: `model` (default
 * text-embedding-ada-002), `apiKey` (a secret: `$var:name`, else env OPENAI_API_KEY), `baseURL` (default env
 * OPENAI_BASE_URL, else https://api.openai.com/v1) and `dimensions` (sent to the endpoint; needed as `ndims()`
 * for a model whose size memwal does not know).
 */
import { type Float, Float32 } from "apache-arrow";
import { AuthError, HttpError, invalid } from "../errors";
import { EmbeddingFunction } from "./embedding_function";
import { registerBuiltIn } from "./registry";

export type OpenAIOptions = {
  apiKey: string;
  model: string;
  /** The API root, e.g. http://127.0.0.1:8080/v1 (memwal's addition; the OpenAI SDK's `baseURL`). */
  baseURL: string;
  /** Output dimensions: sent to the endpoint, and `ndims()` for models memwal does not know. */
  dimensions: number;
};

/** The dimensions of OpenAI's embedding models. */
const KNOWN_DIMS: Record<string, number> = {
  "text-embedding-ada-002": 1536,
  "text-embedding-3-small": 1536,
  "text-embedding-3-large": 3072,
};

/** Inputs per request (the OpenAI API's limit). */
const BATCH = 2048;

export class OpenAIEmbeddingFunction extends EmbeddingFunction<string, Partial<OpenAIOptions>> {
  readonly #model: string;
  readonly #apiKey: string | undefined;
  readonly #baseURL: string | undefined;
  readonly #dimensions: number | undefined;

  constructor(optionsRaw: Partial<OpenAIOptions> = {}) {
    super();
    const o = this.resolveVariables(optionsRaw ?? {});
    const model = o.model ?? "text-embedding-ada-002";
    if (typeof model !== "string" || model === "")
      throw invalid(`openai embedding option 'model' must be a non-empty string, got ${String(model)}`);
    if (o.baseURL !== undefined && (typeof o.baseURL !== "string" || !/^https?:\/\//.test(o.baseURL)))
      throw invalid(`openai embedding option 'baseURL' must be an http:// or https:// URL, got ${JSON.stringify(o.baseURL)}`);
    if (o.dimensions !== undefined && (!Number.isInteger(o.dimensions) || o.dimensions <= 0))
      throw invalid(`openai embedding option 'dimensions' must be a positive whole number, got ${String(o.dimensions)}`);
    this.#model = model;
    this.#apiKey = o.apiKey;
    this.#baseURL = o.baseURL;
    this.#dimensions = o.dimensions;
  }

  protected getSensitiveKeys(): string[] {
    return ["apiKey"];
  }

  ndims(): number {
    const n = this.#dimensions ?? KNOWN_DIMS[this.#model];
    if (n === undefined)
      throw invalid(`the dimensions of openai model '${this.#model}' are unknown to memwal: pass the 'dimensions' option`);
    return n;
  }

  embeddingDataType(): Float {
    return new Float32();
  }

  async computeSourceEmbeddings(data: string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < data.length; i += BATCH) out.push(...(await this.#embed(data.slice(i, i + BATCH))));
    return out;
  }

  async computeQueryEmbeddings(data: string): Promise<number[]> {
    const [v] = await this.#embed([data]);
    return v;
  }

  /** One request for `input`; the answer's vectors in input order. */
  async #embed(input: string[]): Promise<number[][]> {
    input.forEach((s, i) => {
      if (typeof s !== "string")
        throw invalid(`the openai embedding function embeds strings; value ${i} is ${s === null ? "null" : typeof s}`);
    });
    const base = (this.#baseURL ?? process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1").replace(/\/+$/, "");
    const url = `${base}/embeddings`;
    const key = this.#apiKey ?? process.env.OPENAI_API_KEY;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (key) headers.authorization = `Bearer ${key}`;
    const body = JSON.stringify({
      model: this.#model,
      input,
      encoding_format: "float",
      ...(this.#dimensions ? { dimensions: this.#dimensions } : {}),
    });
    let res: Response;
    try {
      res = await fetch(url, { method: "POST", headers, body });
    } catch (e) {
      throw new HttpError("Http", `openai embeddings: POST ${url} failed: ${(e as Error).message}`, { cause: e });
    }
    const text = await res.text();
    if (res.status === 401 || res.status === 403) {
      const hint = key ? "" : " (no API key was given: options.apiKey as $var:name, or env OPENAI_API_KEY)";
      throw new AuthError("Auth", `openai embeddings: POST ${url} answered ${res.status}${hint}: ${text.slice(0, 500)}`);
    }
    if (!res.ok) throw new HttpError("Http", `openai embeddings: POST ${url} answered ${res.status}: ${text.slice(0, 500)}`);
    return vectorsOf(url, text, input.length);
  }
}

/** The vectors of an embeddings answer, by `index`; anything else is an HttpError naming what is wrong. */
function vectorsOf(url: string, text: string, n: number): number[][] {
  const bad = (why: string) => new HttpError("Http", `openai embeddings: the answer of ${url} ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad(`is not JSON: ${text.slice(0, 200)}`);
  }
  const data = (parsed as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw bad("has no data list");
  if (data.length !== n) throw bad(`has ${data.length} embeddings for ${n} inputs`);
  const out: number[][] = new Array(n);
  data.forEach((d: { index?: unknown; embedding?: unknown }, i) => {
    const at = d?.index === undefined ? i : d.index;
    if (typeof at !== "number" || !Number.isInteger(at) || at < 0 || at >= n || out[at] !== undefined)
      throw bad(`has a bad index ${String(at)}`);
    const e = d.embedding;
    if (!Array.isArray(e) || !e.every((x) => typeof x === "number"))
      throw bad(`has a non-numeric embedding at ${at} (base64 answers are not read)`);
    out[at] = e;
  });
  return out;
}

registerBuiltIn("openai", OpenAIEmbeddingFunction);
