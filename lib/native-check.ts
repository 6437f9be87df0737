/**
 * Compile-time check that the shapes lib/native.ts declares are what the addon really exports: its own
 * type definitions (`index.d.ts`, written by `napi build` from the Rust signatures) must be assignable to
 * ours, and our option objects to its parameters. If either side drifts, `tsc` fails. Nothing here runs.
 */
import type * as Addon from "../index";
import type {
  NativeAddon,
  NativeConnection,
  NativeConnectOptions,
  NativeIndexOptions,
  NativeMergeInsertOptions,
  NativeMergeInsertPlan,
  NativeQueryOptions,
  NativeServeOptions,
  NativeServer,
  NativeTable,
} from "./native";

/** `true` when A is assignable to B (compile error otherwise, where it is used). */
type Assignable<A, B> = [A] extends [B] ? true : never;

export const addonMatchesNativeTs: [
  Assignable<Addon.Table, NativeTable>,
  Assignable<Addon.Connection, NativeConnection>,
  Assignable<Addon.Server, NativeServer>,
  Assignable<typeof import("../index"), Pick<NativeAddon, keyof NativeAddon>>,
  Assignable<NativeQueryOptions, Addon.QueryOptions>,
  Assignable<NativeMergeInsertOptions, Addon.MergeInsertOptions>,
  Assignable<Addon.MergeInsertPlan, NativeMergeInsertPlan>,
  Assignable<NativeConnectOptions, Addon.ConnectOptions>,
  Assignable<NativeServeOptions, Addon.ServeOptions>,
  Assignable<NativeIndexOptions, Addon.IndexOptions>,
] = [true, true, true, true, true, true, true, true, true, true];
