import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The folder of the gate's Lua scripts, found the way BullMQ finds its `src/commands`: from this
 * file's own folder. The production build bundles this file into a service's `dist/main.js`
 * and copies the folder next to the bundle (scripts/build.ts), so the same path holds there.
 */
const COMMANDS_DIR = path.join(__dirname, 'commands');

/** A line `--- @include "includes/x.lua"` (a path from the commands folder) stands for that file's text. */
const INCLUDE = /^--- @include "([^"]+)"$/gm;

/**
 * The text of a script of the commands folder, its includes in place. Redis runs one text per
 * script; the includes only let the script be read in parts of a reviewable size.
 */
function loadCommand(file: string): string {
  return readFileSync(path.join(COMMANDS_DIR, file), 'utf8').replace(INCLUDE, (_, included: string) => loadCommand(included).trimEnd());
}

/** commands/gate.lua: the gate's one operation (target-gate.ts `settle`), read once at module load. */
export const GATE_SCRIPT = loadCommand('gate.lua');
