/**
 * The release a process runs, set by the production build (scripts/image/build-bundles.ts,
 * esbuild's `define`): `git describe` of the tree it was built from (`v0.2.0`, or
 * `v0.2.0-3-gabc1234` past a tag, `-dirty` with uncommitted changes), or the package.json
 * version where the build has no git (the image). Run from the sources with tsx: `source`.
 * Exported as the `ingest_build_info{version}` metric (docs/releases.md).
 */
declare const __INGEST_VERSION__: string | undefined;

export const BUILD_VERSION: string = typeof __INGEST_VERSION__ === 'string' ? __INGEST_VERSION__ : 'source';
