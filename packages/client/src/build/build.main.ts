// `npm run build -w @ingest/client`: the files `npm pack` publishes, in dist/.
import { buildClientPackage } from './client-package.js';

await buildClientPackage();
