/**
 * `pnpm build`: the production build. Each process's entry point becomes one plain CommonJS file
 * (with a source map) in the `dist/` folder of its package, so that `node --enable-source-maps
 * <file>` starts it with no TypeScript compiled in the process.
 *
 * esbuild bundles Herald's own code (the entry and every @herald/* package it imports) and leaves
 * every third-party package outside the bundle, loaded from where pnpm installed it, exactly as a
 * run from source loads it: its files found next to its own code (bull-board's views and assets,
 * swagger-ui-dist, Prisma's query compiler), its native addon (msgpackr-extract under bullmq), its
 * lazy loading (axios at the first token request) all stay as they are.
 *
 * A package outside the bundle is required by a path relative to the bundle, into the
 * node_modules of the workspace package that depends on it (`../../../packages/db/node_modules/
 * kysely/dist/cjs/index.js`): Node cannot find it by name from the bundle, since pnpm installs
 * each dependency only in the node_modules of the package that lists it. So is a `require.resolve`
 * of a package's file (the events-api's swagger-ui-dist).
 *
 * Why `<package>/dist/`: it sits one level below the package root like `src/`, so code that finds
 * a file from its own `__dirname` (packages/db's migrations folder, `../../../prisma/migrations`)
 * finds it from the bundle as from source. Every workspace package is two levels below the root,
 * so this holds for code bundled from one package into another's dist as well.
 *
 * Redis scripts (`.lua`, in a `commands/` folder beside the code that reads them from disk at module
 * load, from its own `__dirname`, the way BullMQ reads its own) are copied into a `commands/` folder
 * next to each bundle holding that code, where it finds them: its `__dirname` is its source folder
 * when run from source, the bundle's folder when bundled. They are not inlined into the bundle: the same code runs from source under
 * tsx, which cannot import a `.lua` file.
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { build as esbuild, type Plugin } from 'esbuild';
import { BUILD_ENTRIES, type BuildEntry } from './bundles';

const ROOT = path.resolve(__dirname, '..');

/**
 * Marks every import of a third-party package external, rewritten to a path relative to the bundle
 * (see the file's comment). Resolved by esbuild, so a package's `exports` map picks the file, then
 * expressed through the symlink in the importer's node_modules rather than pnpm's store folder,
 * whose name carries peer dependency versions.
 */
function thirdPartyExternal(bundleDir: string): Plugin {
  return {
    name: 'third-party-external',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === 'resolving' || args.path.startsWith('@herald/') || args.path.startsWith('node:')) return undefined;
        // An import statement becomes a require() in the CommonJS bundle: resolve it as Node resolves
        // that require (the package's "require" condition, not its ES module build).
        const kind = args.kind === 'import-statement' ? 'require-call' : args.kind;
        const resolved = await build.resolve(args.path, { kind, resolveDir: args.resolveDir, pluginData: 'resolving' });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        if (resolved.external || !path.isAbsolute(resolved.path)) return { path: args.path, external: true }; // a Node built-in
        const name = packageName(args.path);
        const link = findPackageLink(args.resolveDir, name);
        const file = path.join(link, path.relative(realpathSync(link), resolved.path));
        return { path: toRequirePath(path.relative(bundleDir, file)), external: true };
      });
    },
  };
}

/**
 * The root package.json, imported for its version (the User-Agent's), enters the bundles as its
 * version alone: its scripts and development dependencies stay out of production code. A named
 * import would let esbuild drop the rest, but under tsx a named import of JSON is undefined.
 */
function rootManifestVersionOnly(): Plugin {
  const manifest = path.join(ROOT, 'package.json');
  return {
    name: 'root-manifest-version-only',
    setup(build) {
      build.onLoad({ filter: /[\\/]package\.json$/ }, async (args) => {
        if (args.path !== manifest) return undefined;
        const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
        return { contents: JSON.stringify({ version }), loader: 'json' };
      });
    },
  };
}

/** `@scope/name` or `name` of an import like `@scope/name/sub/path`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** node_modules/<name> as Node would find it from `dir`: the nearest one up the tree. */
function findPackageLink(dir: string, name: string): string {
  for (let current = dir; ; current = path.dirname(current)) {
    const candidate = path.join(current, 'node_modules', name);
    try {
      realpathSync(candidate);
      return candidate;
    } catch {
      if (path.dirname(current) === current) throw new Error(`build: ${name} is not installed where ${dir} can find it`);
    }
  }
}

function toRequirePath(relative: string): string {
  const posix = relative.split(path.sep).join('/');
  return posix.startsWith('.') ? posix : `./${posix}`;
}

/**
 * The Redis scripts a bundle needs: the files of the `commands/` folder beside each of its source
 * files that has one (gate-script.ts beside target-gate/commands/), by their path inside that
 * folder. Two folders may not hold the same path: they share the bundle's `commands/` folder.
 */
async function luaCommandsOf(inputs: readonly string[]): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const folders = new Set(inputs.filter((input) => !input.includes('node_modules')).map((input) => path.join(ROOT, path.dirname(input), 'commands')));
  for (const folder of folders) {
    const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
      const file = path.join(entry.parentPath, entry.name);
      const name = path.relative(folder, file).split(path.sep).join('/');
      const other = files.get(name);
      if (other) throw new Error(`build: ${path.relative(ROOT, file)} and ${path.relative(ROOT, other)} would both be commands/${name} next to a bundle`);
      files.set(name, file);
    }
  }
  return files;
}

/** Writes `contents` to `file` unless it holds them already, through a temporary name (see buildAll). */
async function writeIfChanged(file: string, contents: Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const previous = await readFile(file).catch(() => undefined);
  if (previous?.equals(contents)) return;
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, contents, { mode });
  await rename(temporary, file);
}

/**
 * Builds every entry point (or those named) into its bundle. Each file is written to a temporary
 * name and renamed, so a process starting while a build runs (a test, the bench) reads either
 * the old bundle or the new one, never half a file.
 */
export async function buildAll(only: readonly BuildEntry[] = Object.keys(BUILD_ENTRIES) as BuildEntry[]): Promise<void> {
  // Script file to copy -> its source; several bundles share a folder (the events-api's server and
  // CLI), so each copy is written once, after the bundles.
  const scripts = new Map<string, string>();
  await Promise.all(
    only.map(async (name) => {
      const { source, bundle } = BUILD_ENTRIES[name];
      const result = await esbuild({
        absWorkingDir: ROOT,
        entryPoints: [source],
        outfile: bundle,
        bundle: true,
        platform: 'node',
        format: 'cjs',
        // Node's own conditions only (node, require, default): esbuild adds `module` by default,
        // which resolved @opentelemetry/api and semantic-conventions to their ES module builds,
        // which a CommonJS bundle cannot require on Node 20 (a directory import), and would load a
        // second copy of the API beside the one the tracing SDK requires.
        conditions: [],
        target: 'node20',
        // Stack traces name the TypeScript files and lines (with --enable-source-maps). The sources
        // themselves stay out of the map: they are in the repository, and the map stays small.
        sourcemap: 'linked',
        sourcesContent: false,
        // Error classes and log fields keep their names.
        keepNames: true,
        // The CLI runs as a command; the other bundles are started with node and ignore the line.
        banner: name === 'cli' ? { js: '#!/usr/bin/env node' } : undefined,
        plugins: [thirdPartyExternal(path.dirname(path.join(ROOT, bundle))), rootManifestVersionOnly()],
        write: false,
        metafile: true,
        logLevel: 'warning',
      });
      for (const file of result.outputFiles) await writeIfChanged(file.path, file.contents, name === 'cli' && file.path.endsWith('.js') ? 0o755 : 0o644);
      const commandsDir = path.join(ROOT, path.dirname(bundle), 'commands');
      for (const [relative, file] of await luaCommandsOf(Object.keys(result.metafile.inputs))) scripts.set(path.join(commandsDir, relative), file);
    }),
  );
  for (const [copy, file] of scripts) await writeIfChanged(copy, await readFile(file));
}

if (require.main === module) {
  const started = Date.now();
  buildAll().then(
    () => {
      const bundles = Object.values(BUILD_ENTRIES).map((entry) => entry.bundle);
      console.log(`built ${bundles.join(', ')} in ${Date.now() - started} ms`);
    },
    (error: unknown) => {
      console.error(`build failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
