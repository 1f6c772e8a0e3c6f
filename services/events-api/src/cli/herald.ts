// `pnpm herald …`: support staff's command line over the events-api admin API.
import { ConfigError, loadCliConfig, type CliConfig } from '@herald/config';
import { AdminRequestError } from './admin-client';
import { UsageError, type CliIo } from './command';
import { DELIVERIES_USAGE, runDeliveriesCommand } from './deliveries-command';
import { runTargetsCommand, TARGETS_USAGE } from './targets-command';

const USAGE = `Usage:
${TARGETS_USAGE}

${DELIVERIES_USAGE}

Environment: HERALD_API_URL (default http://127.0.0.1:3000), ADMIN_TOKEN.`;

const COMMANDS = new Map<string, (argv: readonly string[], io: CliIo, config: CliConfig) => Promise<number>>([
  ['targets', runTargetsCommand],
  ['deliveries', runDeliveriesCommand],
]);

const io: CliIo = {
  async readStdin() {
    if (process.stdin.isTTY) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  try {
    if (argv.includes('--help') || argv.includes('-h')) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const command = COMMANDS.get(argv[0] ?? '');
    // Only the first word is echoed: a mistyped command line may hold anything.
    if (!command) throw new UsageError(`expected "targets …" or "deliveries …", got "${argv[0] ?? ''}"`);
    return await command(argv, io, loadCliConfig());
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`herald: ${error.message}\nRun "pnpm herald --help" for usage.\n`);
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
