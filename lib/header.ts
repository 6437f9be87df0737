/**
 * Header providers, as @lancedb/lancedb 0.39 exports them: `HeaderProvider` (subclass it and give
 * `getHeaders()`), `StaticHeaderProvider` (the same headers every request) and `OAuthHeaderProvider` (a bearer
 * token from a fetcher, refreshed by `refreshToken()`). `connect()` asks the provider before every request.
 */

/** Gives the headers added to every request to a remote database (asked before each). */
export abstract class HeaderProvider {
  /** The headers for the next request; they replace same-named ones. A throw fails the request. */
  abstract getHeaders(): Record<string, string>;
}

/** The same headers for every request. */
export class StaticHeaderProvider extends HeaderProvider {
  private readonly _headers: Record<string, string>;

  /** Keeps a copy of `headers`: later changes to the object given are not seen. */
  constructor(headers: Record<string, string>) {
    super();
    this._headers = { ...headers };
  }

  /** A copy of the headers. */
  getHeaders(): Record<string, string> {
    return { ...this._headers };
  }
}

/** What an OAuth token fetcher answers: the token and, optionally, its lifetime in seconds. */
export interface TokenResponse {
  accessToken: string;
  expiresIn?: number;
}

/**
 * `authorization: Bearer <token>`, the token coming from `tokenFetcher`. As in @lancedb/lancedb 0.39,
 * `getHeaders()` is synchronous and does not fetch: call `refreshToken()` first (and again to renew it); before
 * that, requests fail with "Token not initialized. Call refreshToken() first or use async initialization.".
 */
export class OAuthHeaderProvider extends HeaderProvider {
  private readonly _tokenFetcher: () => Promise<TokenResponse> | TokenResponse;
  private readonly _refreshBufferSeconds: number;
  private _currentToken: string | null = null;
  /** Seconds since the epoch, or null when the token gave no lifetime. */
  private _tokenExpiresAt: number | null = null;
  private _refreshPromise: Promise<void> | null = null;

  /**
   * @param tokenFetcher - answers `{ accessToken, expiresIn? }`.
   * @param refreshBufferSeconds - how long before expiry a token counts as due for refresh (default 300).
   */
  constructor(tokenFetcher: () => Promise<TokenResponse> | TokenResponse, refreshBufferSeconds = 300) {
    super();
    this._tokenFetcher = tokenFetcher;
    this._refreshBufferSeconds = refreshBufferSeconds;
  }

  /** No token yet, or within the buffer of its expiry (a token without lifetime never is). */
  private _needsRefresh(): boolean {
    if (this._currentToken === null) return true;
    if (this._tokenExpiresAt === null) return false;
    return Date.now() / 1000 >= this._tokenExpiresAt - this._refreshBufferSeconds;
  }

  /** Fetches a token when one is due; concurrent callers share one fetch. */
  private async _refreshTokenIfNeeded(): Promise<void> {
    if (!this._needsRefresh()) return;
    if (this._refreshPromise !== null) {
      await this._refreshPromise;
      return;
    }
    const run = async () => {
      try {
        const got = await this._tokenFetcher();
        this._currentToken = got.accessToken;
        if (!this._currentToken) throw new Error("Token fetcher did not return 'accessToken'");
        this._tokenExpiresAt = got.expiresIn ? Date.now() / 1000 + got.expiresIn : null;
      } finally {
        this._refreshPromise = null;
      }
    };
    this._refreshPromise = run();
    await this._refreshPromise;
  }

  /** `{ authorization: "Bearer <token>" }`; throws when no token has been fetched. */
  getHeaders(): Record<string, string> {
    if (!this._currentToken && !this._refreshPromise) {
      throw new Error("Token not initialized. Call refreshToken() first or use async initialization.");
    }
    if (!this._currentToken) throw new Error("Failed to obtain OAuth token");
    return { authorization: `Bearer ${this._currentToken}` };
  }

  /** Fetches a new token now (whatever the current one's expiry). */
  async refreshToken(): Promise<void> {
    this._currentToken = null;
    await this._refreshTokenIfNeeded();
  }
}

/** The OAuth flows of 0.39's `oauthConfig` connect option (which memwal refuses: see {@link OAuthConfig}). */
export enum OAuthFlowType {
  ClientCredentials = "client_credentials",
  AzureManagedIdentity = "azure_managed_identity",
}

/**
 * 0.39's `connect(uri, { oauthConfig })`, for code that names the type: memwal refuses the option
 * (NotSupported; its token flows are not implemented). Fetch tokens in an {@link OAuthHeaderProvider} instead.
 */
export interface OAuthConfig {
  issuerUrl: string;
  clientId: string;
  scopes: string[];
  flow?: OAuthFlowType;
  clientSecret?: string;
  managedIdentityClientId?: string;
  refreshBufferSecs?: number;
}
