// `herald …` (`pnpm exec herald`, or node_modules/.bin/herald): support staff's
// command line over the events-api admin API.
import { ConfigError, loadCliConfig, type CliConfig } from '@herald/config';
import { AdminRequestError } from './admin-client';
import { runApiKeysCommand, API_KEYS_USAGE } from './api-keys-command';
import { UsageError, type CliIo } from './command';
import { DELIVERIES_USAGE, runDeliveriesCommand } from './deliveries-command';
import { PORTAL_LINKS_USAGE, runPortalLinksCommand } from './portal-links-command';
import { runMerchantsCommand, runProgramsCommand, TENANTS_USAGE } from './tenants-command';
import { runTargetsCommand, TARGETS_USAGE } from './targets-command';

const USAGE = `Usage:
${TENANTS_USAGE}

${API_KEYS_USAGE}

${TARGETS_USAGE}

${DELIVERIES_USAGE}

${PORTAL_LINKS_USAGE}

"herald help" or "herald --help" prints this.
Every command prints a table (lists) or one field a line by default, and the API's JSON with --json.
Run it as "pnpm exec herald …" (or "node_modules/.bin/herald …").
Environment: HERALD_API_URL (default http://127.0.0.1:$PORT, PORT default 3000), ADMIN_TOKEN.`;

const COMMANDS = new Map<string, (argv: readonly string[], io: CliIo, config: CliConfig) => Promise<number>>([
  ['programs', runProgramsCommand],
  ['merchants', runMerchantsCommand],
  ['api-keys', runApiKeysCommand],
  ['targets', runTargetsCommand],
  // Before deliveries, which the usage error for a mistyped command names last.
  ['portal-links', runPortalLinksCommand],
  ['deliveries', runDeliveriesCommand],
]);

// Options that would put a secret on the command line, where the process list shows it to others.
const SECRET_OPTION = /^--(password|token|admin-token|api-key|key|secret)(=|$)/;

const io: CliIo = {
  async readStdin() {
    if (process.stdin.isTTY) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  promptSecret: (prompt) => (process.stdin.isTTY && process.stderr.isTTY ? readWithoutEcho(prompt) : Promise.resolve(undefined)),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** One line typed at the terminal, shown as nothing: raw mode, so the terminal echoes no key. */
function readWithoutEcho(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    // Echo off before the prompt shows: anything typed after seeing it stays unseen.
    stdin.setRawMode(true);
    process.stderr.write(prompt);
    stdin.resume();
    let typed = '';
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n' || char === '\u0004') return done();
        if (char === '\u0003') return done(new UsageError('cancelled'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.on('data', onData);
  });
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  try {
    if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    // No command at all: what a new user types first. The usage answers it; 2, as nothing was done.
    if (argv.length === 0) {
      io.stderr(`${USAGE}\n`);
      return 2;
    }
    // Refused before parsing, and without echoing the argument: it holds the secret.
    const secret = argv.find((arg) => SECRET_OPTION.test(arg));
    if (secret !== undefined) {
      const name = SECRET_OPTION.exec(secret)![1];
      throw new UsageError(
        name === 'password'
          ? '--password is not accepted: use --password-stdin, then pipe the password in or type it at the prompt'
          : `--${name} is not accepted on the command line: secrets come from the environment (ADMIN_TOKEN) or standard input`,
      );
    }
    const command = COMMANDS.get(argv[0] ?? '');
    // Only the first word is echoed: a mistyped command line may hold anything.
    if (!command) throw new UsageError(`expected one of ${[...COMMANDS.keys()].map((name) => `"${name} …"`).join(', ')}, got "${argv[0] ?? ''}"`);
    return await command(argv, io, loadCliConfig());
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`herald: ${error.message}\nRun "herald --help" for usage.\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      io.stderr(`herald: ${error.message}\n`);
      return 2;
    }
    if (error instanceof AdminRequestError) {
      io.stderr(`herald: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

main().then((code) => {
  process.exitCode = code;
});
