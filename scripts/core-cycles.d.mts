/** Every value-import cycle among the TypeScript files under `dir`, each as sorted paths relative to it. */
export function valueCycles(dir: string): string[][];
