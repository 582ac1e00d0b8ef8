import { describe, expect, it } from 'vitest';
import { assertProjectNode, projectNodeMajor, reportedNodeVersion } from './node-runtime.js';

const metrics = (version: string) =>
  `# HELP nodejs_version_info Node.js version info.\n# TYPE nodejs_version_info gauge\nnodejs_version_info{version="${version}",major="${version.slice(1).split('.')[0]}",minor="0",patch="0",service="gateway"} 1\n`;

describe('the project runtime check', () => {
  it('reads the version a service reports and accepts only the .nvmrc major', () => {
    expect(projectNodeMajor()).toBe('24');
    expect(reportedNodeVersion(metrics('v24.21.0'))).toBe('v24.21.0');
    expect(assertProjectNode('gateway', metrics('v24.21.0'))).toBe('v24.21.0');
    expect(() => assertProjectNode('gateway g1', metrics('v20.20.2'))).toThrow(/gateway g1 runs Node v20.20.2, the project's runtime is Node 24/);
    expect(() => assertProjectNode('gateway g1', '# nothing\n')).toThrow(/not reported/);
  });

  it('runs the tests themselves on the project runtime', () => {
    expect(process.versions.node.split('.')[0]).toBe(projectNodeMajor());
  });
});
