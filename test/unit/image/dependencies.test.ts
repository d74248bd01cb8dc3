// The image's production dependencies (package.json "dependencies", what `npm ci --omit=dev` installs): the
// QuickJS build is used through its private FFI (src/ois/quickjs-ffi.ts calls the QTS_* functions and the
// variant's loader directly), which any release may change, so it is pinned to the exact version installed and
// tested; quickjs-emscripten-core gives only the types of that FFI, so it is a devDependency.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '../../support/binary.js';

type PackageJson = {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

const readJson = (path: string): PackageJson => JSON.parse(readFileSync(join(repoRoot, path), 'utf8')) as PackageJson;
const project = readJson('package.json');
const installedVersion = (name: string) => readJson(`node_modules/${name}/package.json`).version;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every import or export statement of src/ that names `name`, from its keyword to the specifier. */
function statementsNaming(name: string): string[] {
  const statement = new RegExp(`\\b(?:import|export)\\b[^;]*?from\\s+'${name.replace(/[/.]/g, '\\$&')}'`, 'g');
  const dynamic = new RegExp(`\\bimport\\s*\\(\\s*'${name.replace(/[/.]/g, '\\$&')}'`, 'g');
  return sourceFiles(join(repoRoot, 'src')).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return [...text.matchAll(statement), ...text.matchAll(dynamic)].map((match) => match[0]);
  });
}

describe('production dependencies', () => {
  it('pins the QuickJS build whose private FFI the sandbox uses to the exact version installed', () => {
    const name = '@jitl/quickjs-wasmfile-release-sync';
    expect(project.dependencies?.[name]).to.equal(installedVersion(name));
  });

  it('pins secp256k1, whose bindings entry (not its main, which falls back to elliptic) the signer loads', () => {
    expect(project.dependencies?.secp256k1).to.equal(installedVersion('secp256k1'));
    expect(project.dependencies?.['tiny-secp256k1']).to.equal(installedVersion('tiny-secp256k1'));
  });

  it('keeps quickjs-emscripten-core, imported for types only, out of the production dependencies', () => {
    const name = 'quickjs-emscripten-core';
    const statements = statementsNaming(name);
    expect(statements).to.not.deep.equal([]);
    for (const statement of statements) expect(statement).to.match(/^(?:import|export) type\b/);
    expect(project.dependencies).to.not.have.property(name);
    // Its FFI types must describe the build that is installed.
    expect(project.devDependencies?.[name]).to.equal(installedVersion(name));
    expect(installedVersion(name)).to.equal(installedVersion('@jitl/quickjs-wasmfile-release-sync'));
  });
});
