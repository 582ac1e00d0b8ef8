/**
 * Unknown fields in Kubernetes manifests. The API's schemas allow additional properties, so a
 * misspelt or misplaced field (`replica:`, `readinessProbe` indented under `resources`) passes
 * schema validation and is silently dropped by the API server (or refused only by
 * `kubectl --validate=strict` against a live cluster). The `kubernetes-models` package also
 * ships the same definitions as TypeScript types: each manifest becomes an object literal of
 * its kind's type, and the compiler's excess-property check names every field that does not
 * exist, with its path.
 */
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import ts from 'typescript';
import type { Manifest } from './k8s-manifests.js';

/** apiVersion/kind -> the module and interface of its type (same kinds as MODELS). */
const TYPES: Record<string, { module: string; name: string }> = {
  'v1/Namespace': { module: 'kubernetes-models/v1/Namespace', name: 'INamespace' },
  'v1/ConfigMap': { module: 'kubernetes-models/v1/ConfigMap', name: 'IConfigMap' },
  'v1/Secret': { module: 'kubernetes-models/v1/Secret', name: 'ISecret' },
  'v1/Service': { module: 'kubernetes-models/v1/Service', name: 'IService' },
  'apps/v1/Deployment': { module: 'kubernetes-models/apps/v1/Deployment', name: 'IDeployment' },
  'autoscaling/v2/HorizontalPodAutoscaler': { module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', name: 'IHorizontalPodAutoscaler' },
  'policy/v1/PodDisruptionBudget': { module: 'kubernetes-models/policy/v1/PodDisruptionBudget', name: 'IPodDisruptionBudget' },
  'batch/v1/Job': { module: 'kubernetes-models/batch/v1/Job', name: 'IJob' },
  'networking.k8s.io/v1/NetworkPolicy': { module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy', name: 'INetworkPolicy' },
};

export function unknownFieldProblems(manifests: Manifest[], root = REPO_ROOT): string[] {
  // A file that does not exist on disk, placed in the repository so node_modules resolves.
  const virtualFile = join(root, 'deploy/checks/__k8s_manifests__.ts');
  const problems: string[] = [];
  const imports = new Map<string, string>();
  const blocks: { manifest: Manifest; from: number; to: number }[] = [];
  const body: string[] = [];
  manifests.forEach((m, i) => {
    const type = TYPES[`${m.doc.apiVersion}/${m.doc.kind}`];
    if (!type) {
      problems.push(`${m.file} #${m.index + 1}: no type for apiVersion ${m.doc.apiVersion} kind ${m.doc.kind}`);
      return;
    }
    const alias = `T${imports.size}`;
    if (!imports.has(type.module)) imports.set(type.module, `import type { ${type.name} as ${alias} } from '${type.module}';`);
    const typeAlias = /as (T\d+)/.exec(imports.get(type.module) ?? '')?.[1] ?? alias;
    const literal = JSON.stringify(m.doc, null, 2).split('\n');
    blocks.push({ manifest: m, from: body.length, to: body.length + literal.length });
    body.push(`export const m${i}: ${typeAlias} = ${literal[0]}`, ...literal.slice(1));
  });
  const header = [...imports.values()];
  const source = [...header, ...body].join('\n');

  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === virtualFile ? ts.createSourceFile(name, source, version, true) : getSourceFile(name, version, ...rest);
  host.fileExists = (name) => name === virtualFile || fileExists(name);
  const program = ts.createProgram([virtualFile], options, host);
  const sourceFile = program.getSourceFile(virtualFile);
  const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)];
  for (const d of diagnostics) {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line - header.length : -1;
    const block = blocks.find((b) => line >= b.from && line < b.to);
    const where = block ? `${block.manifest.file} #${block.manifest.index + 1} (${block.manifest.doc.kind} ${block.manifest.doc.metadata?.name})` : 'manifests';
    const path = block && d.file && d.start !== undefined ? jsonPathAt(source, d.start) : '';
    problems.push(`${where}${path ? ` at ${path}` : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
  }
  return problems;
}

/** The JSON path of the property at `offset` in the generated literal, e.g. spec.template.spec. */
function jsonPathAt(source: string, offset: number): string {
  const lineStart = source.lastIndexOf('\n', offset) + 1;
  const indentOf = (line: string) => line.length - line.trimStart().length;
  const lines = source.slice(0, lineStart).split('\n');
  const here = source.slice(lineStart, source.indexOf('\n', offset) === -1 ? undefined : source.indexOf('\n', offset));
  const path: string[] = [];
  let indent = indentOf(here);
  const own = /^\s*"([^"]+)":/.exec(here)?.[1];
  if (own) path.unshift(own);
  for (let i = lines.length - 1; i >= 0 && indent > 0; i--) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || indentOf(line) >= indent) continue;
    indent = indentOf(line);
    const key = /^\s*"([^"]+)":/.exec(line)?.[1];
    if (key) path.unshift(key);
    else if (/^\s*[[{]\s*$/.test(line)) path.unshift('[]');
  }
  return path.join('.').replace(/\.\[\]/g, '[]');
}
