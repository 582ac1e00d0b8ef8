import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // One module graph per worker instead of one per file: the files import the same
          // Fastify/Kafka/schema modules, and re-importing them for each of ~140 files was most
          // of the project's time (1 min 50 s against 26 s, whole project, this 2-core machine).
          // The price: a file must leave no global state behind (process.env, timers, mocks).
          isolate: false,
          include: [
            '{packages,services}/*/src/**/*.test.ts',
            'services/console/web/src/**/*.test.ts',
            'schemas/src/**/*.test.ts',
            'tools/*/src/**/*.test.ts',
            'bench/src/**/*.test.ts',
            'testkit/src/**/*.test.ts',
            'scripts/**/*.test.ts',
            'deploy/checks/**/*.test.ts',
          ],
          exclude: [
            '**/*.integration.test.ts',
            '**/*.chaos.test.ts',
            '**/*.scale.test.ts',
            '**/*.browser.test.ts',
            '**/*.abuse.test.ts',
            '**/*.secure.test.ts',
            '**/*.stack.test.ts',
            '**/*.chdb.test.ts',
            '**/*.scale.test.ts',
            '**/node_modules/**',
          ],
        },
      },
      {
        test: {
          // scripts/stack.sh as a new machine runs it: real Java, Maven and a Kafka broker of each
          // file's own (own ports and STACK_DIR), nothing downloaded. Alone and one file at a
          // time: they check readiness budgets, which must not compete with other tests for CPU.
          name: 'stack',
          include: ['scripts/**/*.stack.test.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 90_000,
        },
      },
      {
        test: {
          // Current ClickHouse engines in-process (chdb from PyPI, scripts/chdb/install.sh):
          // migrations, the writer's bytes and the SQL catalogue on 26.9 and 24.8
          // (docs/clickhouse.md, "Current-engine tests"). No servers needed: one Python process
          // per engine and file.
          name: 'chdb',
          include: ['{packages,services,tools}/*/src/**/*.chdb.test.ts', 'testkit/src/**/*.chdb.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 30_000,
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['{packages,services,tools}/*/src/**/*.integration.test.ts', 'scripts/**/*.integration.test.ts', 'bench/src/**/*.integration.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Real servers on a 2-core machine: a few files at a time, each isolated by prefix.
          maxWorkers: 3,
        },
      },
      {
        test: {
          // One tenant never hurts another (docs/limits.md, the abuse table): each test attacks a
          // real gateway or processor while a second tenant's normal traffic is measured. One file
          // at a time, so a neighbour's latency is judged against its own attack only.
          name: 'abuse',
          include: ['{packages,services}/*/src/**/*.abuse.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // The dashboard in headless Chromium against the real servers and an in-process gateway
          // (and processor where needed). One file at a time: each drives a browser.
          name: 'browser',
          include: ['{packages,services}/*/src/**/*.browser.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          // Kafka over TLS with SASL and ACLs (docs/security.md): the local stack's secure broker
          // (scripts/test.sh starts it beside the plain one), the services as real processes,
          // each with its own principal. One file at a time: it starts three services.
          name: 'secure',
          include: ['{packages,services}/*/src/**/*.secure.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // Guarantees under failure (docs/architecture.md, "Guarantees"): real servers, processors as real OS
          // processes killed with SIGKILL, the shared ClickHouse stopped and restarted. Run alone
          // (scripts/test.sh runs it after the integration tests), one file at a time.
          name: 'chaos',
          include: ['{packages,services}/*/src/**/*.chaos.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          // Scale-out under failure (docs/scale.md): a three-broker Kafka cluster, two ClickHouse
          // replicas, gateways behind a load balancer. `scale-smoke` is the part npm test runs.
          name: 'scale',
          include: ['{packages,services,testkit}/*/src/**/*.scale.test.ts', 'scripts/**/*.scale.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 300_000,
        },
      },
      {
        test: {
          name: 'scale-smoke',
          include: ['{packages,services,testkit}/*/src/**/*.smoke.scale.test.ts', 'scripts/**/*.smoke.scale.test.ts'],
          globalSetup: ['scripts/test/global-setup.fixture.ts'],
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
