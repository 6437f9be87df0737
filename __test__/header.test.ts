/**
 * HeaderProvider, StaticHeaderProvider and OAuthHeaderProvider (as @lancedb/lancedb 0.39 exports them), given
 * to connect() and reaching the real bundled server, which lets in only requests bearing its key.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import {
  connect,
  HeaderProvider,
  NotSupportedError,
  OAuthFlowType,
  OAuthHeaderProvider,
  type Server,
  StaticHeaderProvider,
  serve,
  type TokenResponse,
} from "../lib";
import { tmpDir } from "./helpers";

let server: Server;
const noRetry = { retryConfig: { retries: 0 } };

beforeAll(async () => {
  server = await serve({ dataDir: tmpDir(), apiKey: "secret", flushIntervalMs: 60_000 });
  const db = await connect("db://test", { apiKey: "secret", hostOverride: server.url });
  await db.createTable("t", [{ id: 1n }]);
});

afterAll(async () => {
  await server.close();
});

describe("StaticHeaderProvider", () => {
  test("its x-api-key authenticates a connection whose own key is wrong", async () => {
    const opts = { apiKey: "wrong", hostOverride: server.url, clientConfig: noRetry };
    const without = await connect("db://test", opts);
    await expect(without.tableNames()).rejects.toMatchObject({ code: "Auth" });
    // Fourth argument (0.39's connect(uri, options, session, headerProvider)) and third.
    const fourth = await connect("db://test", opts, undefined, new StaticHeaderProvider({ "x-api-key": "secret" }));
    expect(await fourth.tableNames()).toEqual(["t"]);
    expect(await (await fourth.openTable("t")).countRows()).toBe(1);
    const third = await connect("db://test", opts, new StaticHeaderProvider({ "x-api-key": "secret" }));
    expect(await third.tableNames()).toEqual(["t"]);
    // A wrong key from the provider is refused as one.
    const bad = await connect("db://test", { ...opts, apiKey: "secret" }, undefined, new StaticHeaderProvider({ "x-api-key": "nope" }));
    await expect(bad.tableNames()).rejects.toMatchObject({ code: "Auth" });
  });

  test("keeps a copy of the headers and gives a copy", () => {
    const h = { a: "1" };
    const p = new StaticHeaderProvider(h);
    h.a = "2";
    const got = p.getHeaders();
    expect(got).toEqual({ a: "1" });
    got.a = "3";
    expect(p.getHeaders()).toEqual({ a: "1" });
    expect(p).toBeInstanceOf(HeaderProvider);
  });
});

describe("HeaderProvider subclass", () => {
  test("getHeaders() is asked before every request", async () => {
    class Counting extends HeaderProvider {
      calls = 0;
      getHeaders(): Record<string, string> {
        this.calls++;
        return { "x-api-key": "secret" };
      }
    }
    const p = new Counting();
    const db = await connect("db://test", { apiKey: "wrong", hostOverride: server.url, clientConfig: noRetry }, undefined, p);
    await db.tableNames();
    await (await db.openTable("t")).countRows();
    expect(p.calls).toBe(3);
  });
});

describe("OAuthHeaderProvider", () => {
  test("before refreshToken() requests fail with 0.39's message; after, the bearer token is sent", async () => {
    // The bundled server reads x-api-key first, so the bearer header is checked on a server that records it.
    const seen: Array<string | undefined> = [];
    const recorder = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ tables: [] }));
    });
    await new Promise<void>((r) => recorder.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
      let n = 0;
      const p = new OAuthHeaderProvider(async (): Promise<TokenResponse> => ({ accessToken: `tok${++n}` }));
      const db = await connect("db://test", { apiKey: "k", hostOverride: url, clientConfig: noRetry }, undefined, p);
      await expect(db.tableNames()).rejects.toMatchObject({
        code: "HeaderProvider",
        message: expect.stringContaining("Token not initialized. Call refreshToken() first or use async initialization."),
      });
      expect(seen).toEqual([]);
      await p.refreshToken();
      expect(await db.tableNames()).toEqual([]);
      await p.refreshToken();
      await db.tableNames();
      expect(seen).toEqual(["Bearer tok1", "Bearer tok2"]);
    } finally {
      await new Promise((r) => recorder.close(r));
    }
  });

  test("refresh: one fetch for concurrent callers, a fetch per refreshToken(), errors propagate", async () => {
    let n = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const p = new OAuthHeaderProvider(async () => {
      n++;
      await gate;
      return { accessToken: `t${n}`, expiresIn: 3600 };
    });
    const a = p.refreshToken();
    const b = p.refreshToken();
    // In flight, with no token yet: 0.39's other message.
    expect(() => p.getHeaders()).toThrow("Failed to obtain OAuth token");
    release();
    await Promise.all([a, b]);
    expect(n).toBe(1);
    expect(p.getHeaders()).toEqual({ authorization: "Bearer t1" });
    await p.refreshToken();
    expect(p.getHeaders()).toEqual({ authorization: "Bearer t2" });

    const empty = new OAuthHeaderProvider(() => ({ accessToken: "" }));
    await expect(empty.refreshToken()).rejects.toThrow("Token fetcher did not return 'accessToken'");
    const failing = new OAuthHeaderProvider(() => Promise.reject(new Error("idp down")));
    await expect(failing.refreshToken()).rejects.toThrow("idp down");
    expect(() => failing.getHeaders()).toThrow("Token not initialized");
  });
});

describe("oauthConfig", () => {
  test("0.39's OAuth flows are refused by name, before any key is asked for", async () => {
    const oauthConfig = { issuerUrl: "https://idp.example", clientId: "c", scopes: ["s"], flow: OAuthFlowType.ClientCredentials };
    const e = await connect("db://test", { hostOverride: server.url, oauthConfig }).catch((x) => x);
    expect(e).toBeInstanceOf(NotSupportedError);
    expect(e.message).toContain("oauthConfig");
    expect(OAuthFlowType.AzureManagedIdentity).toBe("azure_managed_identity");
  });
});
