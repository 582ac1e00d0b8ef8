/**
 * The local stack's Kafka cluster (STACK_KAFKA_NODES=3 scripts/stack.sh up; docs/scale.md) as
 * the scale tests see it: which node listens where, SIGKILL or SIGTERM to one node, `stack.sh up`
 * to bring back whatever is down, and the under-replicated partitions (Kafka's own TopicCommand
 * from the stack's jars). Only the nodes whose pid files stack.sh wrote under STACK_DIR are
 * signalled, and only when KAFKA_BROKERS names exactly them.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@ingest/platform';
import { integrationEnv } from './env.js';
import { stackDir } from './processes/service-process.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

export interface ClusterNode {
  /** node.id, 1..N. */
  readonly id: number;
  readonly port: number;
  readonly dir: string;
}

export const CLUSTER_HINT =
  "the scale tests need the stack's Kafka cluster in KAFKA_BROKERS: `npm run test:scale` starts it, or `STACK_KAFKA_NODES=3 bash scripts/stack.sh up` and export the KAFKA_BROKERS it prints";

/** The nodes of KAFKA_BROKERS, each matched to its state directory under $STACK_DIR/kafka-cluster; throws (naming why) otherwise. */
export function stackKafkaCluster(): ClusterNode[] {
  const addresses = integrationEnv().kafkaBrokers.split(',');
  if (addresses.length < 3) throw new Error(`KAFKA_BROKERS=${addresses.join(',')} names ${addresses.length} broker(s); ${CLUSTER_HINT}`);
  return addresses.map((address) => {
    const port = Number(address.split(':').at(-1));
    const id = nodeIdOfPort(port);
    if (id === undefined) throw new Error(`no node under ${join(stackDir(), 'kafka-cluster')} listens on :${port}; ${CLUSTER_HINT}`);
    return { id, port, dir: join(stackDir(), 'kafka-cluster', `node-${id}`) };
  });
}

function nodeIdOfPort(port: number): number | undefined {
  for (let id = 1; id <= 9; id++) {
    const props = join(stackDir(), 'kafka-cluster', `node-${id}`, 'server.properties');
    if (existsSync(props) && readFileSync(props, 'utf8').includes(`advertised.listeners=PLAINTEXT://127.0.0.1:${port}\n`)) return id;
  }
  return undefined;
}

/** The node's pid while it runs (a java process started with its server.properties), else undefined. */
export function clusterNodePid(node: ClusterNode): number | undefined {
  const file = join(node.dir, 'kafka.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const zombie = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
    return !zombie && cmdline.includes(join(node.dir, 'server.properties')) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      done(true);
    });
    socket.on('error', () => done(false));
  });
}

/** SIGKILL (an OOM kill, a lost machine) or SIGTERM (a controlled shutdown), then waits until the node is gone and its port closed. */
export async function stopClusterNode(node: ClusterNode, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
  const pid = clusterNodePid(node);
  if (pid === undefined) throw new Error(`Kafka node ${node.id} (:${node.port}) is not running, or not started by scripts/stack.sh`);
  process.kill(pid, signal);
  await waitFor(async () => (clusterNodePid(node) === undefined && !(await portOpen(node.port))) || undefined, {
    description: `Kafka node ${node.id} (pid ${pid}) to exit after ${signal}`,
    timeoutMs: 60_000,
  });
}

/** `STACK_KAFKA_NODES=N bash scripts/stack.sh up`: starts the nodes that are down and waits until the cluster reports all N brokers. */
export async function startClusterNodes(nodes: readonly ClusterNode[]): Promise<void> {
  await run('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'up'], {
    env: { ...process.env, STACK_KAFKA_NODES: String(nodes.length), KAFKA_CLUSTER_PORT: String(Math.min(...nodes.map((n) => n.port))) },
  });
}

/**
 * Partitions of topics starting with `prefix` whose in-sync replicas are fewer than their
 * replicas (TopicCommand --under-replicated-partitions), one line each; empty once every replica
 * caught up. A JVM per call (about 2 s).
 */
export async function underReplicatedPartitions(nodes: readonly ClusterNode[], prefix: string): Promise<string[]> {
  const { stdout } = await run(
    'java',
    [
      '-Xmx128m',
      '-cp',
      `${join(stackDir(), 'kafka', 'libs')}/*`,
      'org.apache.kafka.tools.TopicCommand',
      '--bootstrap-server',
      nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
      '--describe',
      '--under-replicated-partitions',
    ],
    { timeout: 60_000 },
  );
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith(`Topic: ${prefix}`));
}
