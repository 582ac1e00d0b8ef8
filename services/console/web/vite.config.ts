import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built into services/console/dist/web, served by the console under /dashboard/.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    // No inline data: URLs for scripts; the page's CSP allows only 'self'.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
