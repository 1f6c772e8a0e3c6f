// `pnpm herald …`: support staff's command line over the events-api admin API.
import { ConfigError, loadCliConfig } from '@herald/config';
import { AdminRequestError } from './admin-client';
import { runTargetsCommand, UsageError, type CliIo } from './targets-command';

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
  try {
    return await runTargetsCommand(process.argv.slice(2), io, loadCliConfig());
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
