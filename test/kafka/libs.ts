/**
 * The broker's classpath: Kafka's jars, resolved by Maven from test/kafka/pom.xml
 * into the git-ignored test/.kafka/libs, once. A marker file holding a hash of the
 * pom says the copy finished and matches the pom; without it we resolve again.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_DIR = fileURLToPath(new URL('../..', import.meta.url));
export const KAFKA_STATE_DIR = join(REPO_DIR, 'test', '.kafka');
const POM = join(REPO_DIR, 'test', 'kafka', 'pom.xml');
const LIBS = join(KAFKA_STATE_DIR, 'libs');
const MARKER = join(LIBS, '.resolved');

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env } },
      (err, stdout, stderr) => {
        if (err) reject(Object.assign(err, { stdout, stderr }));
        else resolve({ stdout, stderr });
      },
    );
  });
}

/** Fails with a message naming what to install when `java` (17+) is missing; returns what `java -version` says. */
export async function checkJava(): Promise<string> {
  let out: string;
  try {
    const r = await run('java', ['-version'], 30_000);
    out = r.stderr + r.stdout;
  } catch (err) {
    throw new Error(
      `cannot run \`java -version\` (${(err as Error).message}); install Java 17+ or set KAFKA_BROKERS=host:port`,
      { cause: err },
    );
  }
  const major = Number(/version "(\d+)/.exec(out)?.[1] ?? '0');
  if (major < 17)
    throw new Error(
      `Kafka 3.9 needs Java 17+, found: ${out.split('\n')[0]}; install Java 17+ or set KAFKA_BROKERS=host:port`,
    );
  return out;
}

/** Directory holding the broker's jars; runs Maven only when the marker is missing or stale. */
export async function ensureKafkaLibs(): Promise<string> {
  const pomHash = createHash('sha256').update(readFileSync(POM)).digest('hex');
  if (existsSync(MARKER) && readFileSync(MARKER, 'utf8').trim() === pomHash) return LIBS;
  mkdirSync(KAFKA_STATE_DIR, { recursive: true });
  // Resolve beside the final folder and rename, so an interrupted run never leaves a half-filled libs/.
  const staging = join(KAFKA_STATE_DIR, `libs.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    await run(
      'mvn',
      ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${staging}`, '-DincludeScope=runtime'],
      15 * 60_000,
    );
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    const e = err as Error & { stdout?: string; stderr?: string };
    const detail = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(
      `resolving the Kafka broker's jars with Maven failed (${e.message}); install Maven or set KAFKA_BROKERS=host:port\n${detail}`,
      { cause: err },
    );
  }
  writeFileSync(join(staging, '.resolved'), pomHash);
  // Another run beside this one (.ci/run runs the conformance suite beside npm test) may have resolved them first, and
  // its broker may be running from them: keep that copy rather than remove it under the JVM.
  if (existsSync(MARKER) && readFileSync(MARKER, 'utf8').trim() === pomHash) {
    rmSync(staging, { recursive: true, force: true });
    return LIBS;
  }
  rmSync(LIBS, { recursive: true, force: true });
  renameSync(staging, LIBS);
  return LIBS;
}
