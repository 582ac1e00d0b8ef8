/**
 * Loads the Kubernetes manifests of deploy/k8s/ and validates each document against the
 * Kubernetes API's JSON schemas (the OpenAPI definitions compiled to ajv validators by the
 * `kubernetes-models` package: offline, nothing fetched at test time). A kind without a schema
 * here fails rather than passing unchecked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parseAllDocuments } from 'yaml';

export const K8S_DIR = 'deploy/k8s';

/** One YAML document: where it is and its content. */
export interface Manifest {
  file: string;
  index: number;
  doc: Record<string, unknown> & { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };
}

interface Validatable {
  validate(): void;
}

/** apiVersion/kind -> the schema-validating model; the kinds deploy/k8s uses. */
export const MODELS: Record<string, new (data: never) => Validatable> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

export const CLUSTER_SCOPED = new Set(['Namespace']);

/** The YAML files under `dir` (recursively), each document separately. */
export function loadManifests(dir = K8S_DIR, root = REPO_ROOT): { manifests: Manifest[]; problems: string[] } {
  const manifests: Manifest[] = [];
  const problems: string[] = [];
  const files = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  for (const f of files) {
    const file = relative(root, join(root, dir, f));
    const docs = parseAllDocuments(readFileSync(join(root, dir, f), 'utf8'));
    docs.forEach((d, index) => {
      if (d.errors.length > 0) {
        problems.push(`${file} #${index + 1}: YAML: ${d.errors.map((e) => e.message).join('; ')}`);
        return;
      }
      const doc = d.toJS() as Manifest['doc'] | null;
      if (doc !== null) manifests.push({ file, index, doc });
    });
  }
  return { manifests, problems };
}

/** Schema errors of one manifest; empty when it is valid. */
export function validateManifest(m: Manifest): string[] {
  const where = `${m.file} #${m.index + 1} (${m.doc.kind ?? '?'} ${m.doc.metadata?.name ?? '?'})`;
  if (typeof m.doc !== 'object' || Array.isArray(m.doc)) return [`${where}: not an object`];
  const Model = MODELS[`${m.doc.apiVersion}/${m.doc.kind}`];
  if (!Model) return [`${where}: no schema for apiVersion ${m.doc.apiVersion} kind ${m.doc.kind} (add it to MODELS in deploy/checks/k8s-manifests.ts)`];
  const problems: string[] = [];
  if (!m.doc.metadata?.name) problems.push(`${where}: metadata.name is required`);
  if (!CLUSTER_SCOPED.has(m.doc.kind ?? '') && !m.doc.metadata?.namespace)
    problems.push(`${where}: metadata.namespace is missing (it would land in whatever namespace kubectl uses)`);
  try {
    new Model(m.doc as never).validate();
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
  }
  return problems;
}
