import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';

// The deployment files, read as data: what `docker compose` and `kubectl apply -k` would get.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (rel: string) => readFileSync(path.join(root, rel), 'utf8');
type Obj = Record<string, any>;

// Compose files use YAML merge keys (`<<: *toolport`), which YAML 1.2 leaves off by default.
const compose = parse(read('docker-compose.yml'), { merge: true }) as Obj;
const k8sDir = 'infra/k8s';
const k8sFiles = readdirSync(path.join(root, k8sDir)).filter((f) => /\.ya?ml$/.test(f)).sort();
const docs: Array<{ file: string; doc: Obj }> = k8sFiles.flatMap((file) =>
  parseAllDocuments(read(`${k8sDir}/${file}`)).map((d) => {
    assert.equal(d.errors.length, 0, `${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return { file, doc: d.toJS() as Obj };
  }),
);
const objects = docs.filter(({ file }) => file !== 'kustomization.yaml').map(({ doc }) => doc);
const find = (kind: string, name: string) => {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  assert.ok(o, `${kind}/${name} exists`);
  return o!;
};
const container = (deploy: Obj) => deploy.spec.template.spec.containers[0] as Obj;
const envOf = (c: Obj) => Object.fromEntries((c.env ?? []).map((e: Obj) => [e.name, e]));
const matches = (selector: Obj, labels: Obj) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** A compose CLI if one is installed: the `docker compose` plugin or the standalone `docker-compose`. */
function composeCli(): string[] | undefined {
  for (const cmd of [['docker', 'compose'], ['docker-compose']]) {
    const r = spawnSync(cmd[0]!, [...cmd.slice(1), 'version'], { encoding: 'utf8' });
    if (r.status === 0) return cmd;
  }
  return undefined;
}

describe('docker-compose.yml', () => {
  const s = compose.services as Obj;

  it('runs 2 API replicas and a worker on Postgres and Redis', () => {
    for (const name of ['api', 'worker', 'postgres', 'redis', 'lb']) assert.ok(s[name], `service ${name}`);
    assert.equal(s.api.deploy.replicas, 2);
    assert.equal(s.api.environment.ROLE, 'api');
    assert.equal(s.worker.environment.ROLE, 'worker');
    for (const name of ['api', 'worker']) {
      const env = s[name].environment;
      assert.match(env.DATABASE_URL, /^postgres:\/\/.*@postgres:5432\//);
      assert.equal(env.REDIS_URL, 'redis://redis:6379');
      assert.ok(env.PUBLIC_URL);
      assert.match(env.TOOLPORT_SECRET_KEY, /^\$\{TOOLPORT_SECRET_KEY:\?/, 'the master key is required, never defaulted');
      if (name === 'api') assert.match(env.TOOLPORT_SIGNING_KEYS, /^\$\{TOOLPORT_SIGNING_KEYS:\?/, 'the signing keys are required, never defaulted');
      assert.equal(s[name].depends_on.postgres.condition, 'service_healthy');
      assert.equal(s[name].depends_on.redis.condition, 'service_healthy');
      assert.ok(s[name].build, `${name} builds the image`);
    }
  });

  it('keeps Redis durable and never evicting, with health checks on the data stores', () => {
    const cmd = (s.redis.command as string[]).join(' ');
    assert.match(s.redis.image, /^redis:7/);
    assert.match(cmd, /--appendonly yes/);
    assert.match(cmd, /--maxmemory-policy noeviction/);
    assert.ok(s.redis.healthcheck.test.join(' ').includes('ping'));
    assert.match(s.postgres.image, /^postgres:16/);
    assert.match(s.postgres.healthcheck.test.join(' '), /pg_isready/);
    assert.ok(s.postgres.volumes.some((v: string) => v.endsWith(':/var/lib/postgresql/data')));
    assert.ok(compose.volumes && 'pgdata' in compose.volumes);
  });

  it('balances over the API replicas on 8080 without sticky sessions', () => {
    assert.ok(s.lb.ports.some((p: string) => String(p).endsWith(':8080')));
    assert.equal(s.lb.depends_on.api.condition, 'service_healthy');
    const mount = (s.lb.volumes as string[]).find((v) => v.includes('nginx.conf'))!;
    const conf = read(mount.split(':')[0]!);
    assert.match(conf, /server api:8080 resolve/);
    assert.match(conf, /proxy_pass http:\/\/toolport_api;/);
    const directives = conf.replace(/#.*$/gm, '');
    assert.doesNotMatch(directives, /\b(ip_hash|sticky|hash \$)/, 'no session affinity');
    assert.match(conf, /proxy_buffering off;/, 'event streams pass unbuffered');
    assert.match(conf, /location = \/metrics \{ return 404; \}/);
  });

  it('has an optional migrate step that runs before the app', () => {
    assert.deepEqual(s.migrate.command.slice(-1), ['apps/api/src/migrate.ts']);
    assert.equal(s.api.depends_on.migrate.condition, 'service_completed_successfully');
    assert.ok(existsSync(path.join(root, 'apps/api/src/migrate.ts')));
  });

  it('passes the compose CLI`s own validation', (t) => {
    const cli = composeCli();
    if (!cli) return t.skip('no compose CLI installed (apt-get install docker-compose provides one)');
    // An empty env file, so a developer's own .env cannot satisfy (or break) the check.
    const envFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'toolport-compose-')), '.env');
    writeFileSync(envFile, '');
    const run = (env: Record<string, string>) =>
      spawnSync(cli[0]!, [...cli.slice(1), '--env-file', envFile, '-f', 'docker-compose.yml', 'config', '-q'], {
        cwd: root,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      });
    const ok = run({ TOOLPORT_SECRET_KEY: 'x'.repeat(44), TOOLPORT_SIGNING_KEYS: 'y'.repeat(184) });
    assert.equal(ok.status, 0, ok.stderr);
    const missing = run({ TOOLPORT_SIGNING_KEYS: 'y'.repeat(184) });
    assert.notEqual(missing.status, 0, 'refuses to start without TOOLPORT_SECRET_KEY');
    assert.match(missing.stderr, /TOOLPORT_SECRET_KEY/);
    const noSigning = run({ TOOLPORT_SECRET_KEY: 'x'.repeat(44) });
    assert.notEqual(noSigning.status, 0, 'refuses to start without TOOLPORT_SIGNING_KEYS');
    assert.match(noSigning.stderr, /TOOLPORT_SIGNING_KEYS/);
  });
});

describe('Dockerfile', () => {
  const df = read('Dockerfile');
  it('builds in stages with npm ci and runs as a non-root user with a /healthz health check', () => {
    assert.ok((df.match(/^FROM /gm) ?? []).length >= 3, 'multi-stage');
    assert.match(df, /ARG NODE_IMAGE=node:20-(slim|alpine)/);
    assert.match(df, /npm ci --omit=dev/);
    const users = [...df.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    assert.ok(users.length > 0 && !['root', '0', '0:0'].includes(users.at(-1)!), 'the last USER is not root');
    assert.match(df, /^HEALTHCHECK[\s\S]*\/healthz/m);
    assert.match(df, /^CMD \["node", "--import", "tsx", "apps\/api\/src\/main\.ts"\]/m);
    // Every file the runtime stage copies from the context exists.
    for (const m of df.matchAll(/^COPY (?!--from)(\S+) /gm)) assert.ok(existsSync(path.join(root, m[1]!)), m[1]);
    const ignore = read('.dockerignore');
    for (const p of ['.git', '**/node_modules', '.toolport', '.env']) assert.ok(ignore.split('\n').includes(p), `.dockerignore has ${p}`);
  });
});

describe('infra/k8s', () => {
  it('lists every manifest in kustomization.yaml', () => {
    const kust = docs.find((d) => d.file === 'kustomization.yaml')!.doc;
    assert.deepEqual([...kust.resources].sort(), k8sFiles.filter((f) => f !== 'kustomization.yaml'));
  });

  it('runs 2+ API pods with probes, resources, drain time and a locked-down container', () => {
    const api = find('Deployment', 'toolport-api');
    assert.ok(api.spec.replicas >= 2);
    const pod = api.spec.template.spec;
    const c = container(api);
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
    assert.equal(pod.terminationGracePeriodSeconds, 40);
    assert.deepEqual(c.lifecycle.preStop.exec.command.slice(0, 1), ['sleep']);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.ok(pod.securityContext.runAsUser > 0);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(envOf(c).ROLE.value, 'api');
    // DATA_DIR (from the ConfigMap) is a writable emptyDir, as is /tmp.
    const dataDir = find('ConfigMap', 'toolport-config').data.DATA_DIR;
    for (const dir of [dataDir, '/tmp']) {
      const mount = c.volumeMounts.find((m: Obj) => m.mountPath === dir);
      assert.ok(mount, `${dir} is mounted`);
      assert.ok(pod.volumes.find((v: Obj) => v.name === mount.name).emptyDir, `${dir} is an emptyDir`);
    }
  });

  it('runs workers as their own Deployment', () => {
    const w = find('Deployment', 'toolport-worker');
    const c = container(w);
    assert.equal(envOf(c).ROLE.value, 'worker');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(w.spec.template.spec.securityContext.runAsNonRoot, true);
  });

  it('routes the Ingress to the API Service, which selects the API pods', () => {
    const api = find('Deployment', 'toolport-api');
    const svc = find('Service', 'toolport-api');
    assert.ok(matches(svc.spec.selector, api.spec.template.metadata.labels));
    assert.ok(!matches(svc.spec.selector, find('Deployment', 'toolport-worker').spec.template.metadata.labels));
    assert.equal(svc.spec.sessionAffinity ?? 'None', 'None');
    const ing = find('Ingress', 'toolport');
    assert.equal(ing.spec.rules[0].http.paths[0].backend.service.name, 'toolport-api');
  });

  it('has a migration Job, autoscalers and disruption budgets', () => {
    const job = find('Job', 'toolport-migrate');
    assert.deepEqual(job.spec.template.spec.containers[0].command.slice(-1), ['apps/api/src/migrate.ts']);
    assert.equal(job.spec.template.spec.restartPolicy, 'Never');

    const apiHpa = find('HorizontalPodAutoscaler', 'toolport-api');
    assert.equal(apiHpa.spec.scaleTargetRef.name, 'toolport-api');
    assert.ok(apiHpa.spec.minReplicas >= 2);
    assert.ok(apiHpa.spec.metrics.some((m: Obj) => m.type === 'Resource' && m.resource.name === 'cpu'));
    const wHpa = find('HorizontalPodAutoscaler', 'toolport-worker');
    assert.equal(wHpa.spec.scaleTargetRef.name, 'toolport-worker');
    assert.ok(wHpa.spec.metrics.some((m: Obj) => m.type === 'Resource' && m.resource.name === 'cpu'));
    assert.ok(wHpa.spec.metrics.some((m: Obj) => m.type === 'External' && m.external.metric.name === 'toolport_queue_depth'));

    for (const name of ['toolport-api', 'toolport-worker']) {
      const pdb = find('PodDisruptionBudget', name);
      const deploy = find('Deployment', name);
      assert.ok(matches(pdb.spec.selector.matchLabels, deploy.spec.template.metadata.labels), `${name} PDB selects its pods`);
      assert.ok(pdb.spec.minAvailable >= 1 || pdb.spec.maxUnavailable !== undefined);
    }
  });

  it('takes secrets from toolport-secrets by reference and inlines none', () => {
    assert.ok(!objects.some((o) => o.kind === 'Secret'), 'no Secret manifest with values');
    const secretNames = ['DATABASE_URL', 'REDIS_URL', 'TOOLPORT_SECRET_KEY', 'TOOLPORT_SIGNING_KEYS', 'VAPID_PUBLIC_KEY', 'VAPID_PRIVATE_KEY'];
    const optional = ['VAPID_PUBLIC_KEY', 'VAPID_PRIVATE_KEY'];
    const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
    for (const w of workloads) {
      for (const c of w.spec.template.spec.containers as Obj[]) {
        for (const e of c.env ?? []) {
          if (!secretNames.includes(e.name)) continue;
          assert.equal(e.value, undefined, `${w.metadata.name}: ${e.name} is not inline`);
          const ref = { name: 'toolport-secrets', key: e.name, ...(optional.includes(e.name) ? { optional: true } : {}) };
          assert.deepEqual(e.valueFrom.secretKeyRef, ref);
        }
      }
    }
    // Only API processes sign access tokens and send push notifications.
    const needs = { 'toolport-api': secretNames, 'toolport-worker': ['DATABASE_URL', 'REDIS_URL', 'TOOLPORT_SECRET_KEY'] };
    for (const [d, names] of Object.entries(needs)) {
      const env = envOf(container(find('Deployment', d)));
      for (const n of names) assert.ok(env[n]?.valueFrom?.secretKeyRef, `${d} reads ${n} from the Secret`);
    }
    const cm = find('ConfigMap', 'toolport-config');
    for (const n of secretNames) assert.equal(cm.data[n], undefined, `${n} is not in the ConfigMap`);
    assert.ok(cm.data.PUBLIC_URL);
    // Nothing that looks like a credential: a URL with a password, a 32-byte base64 key.
    const all = k8sFiles.map((f) => read(`${k8sDir}/${f}`)).join('\n');
    assert.doesNotMatch(all, /\w+:\/\/[^/\s:@]+:[^/\s@]+@/);
    assert.doesNotMatch(all, /[A-Za-z0-9+/]{43}=/);
  });
});

describe('docs/operations.md', () => {
  it('documents every setting parseConfig reads, and how to start the stack', () => {
    const ops = read('docs/operations.md');
    const vars = new Set([...read('packages/core/src/config.ts').matchAll(/env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!));
    assert.ok(vars.size >= 9);
    for (const v of vars) assert.match(ops, new RegExp(`^\\| \`${v}\` \\|`, 'm'), `${v} is in the settings table`);
    assert.match(ops, /docker compose up/);
    assert.match(ops, /rotateSigningKey/);
    for (const p of ['/healthz', '/readyz', '/metrics', 'pg_dump', 'toolport_queue_depth']) assert.ok(ops.includes(p), p);
  });
});
