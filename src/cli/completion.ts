// `oracle-node completion bash|zsh`: a completion script for the commands (summaries.ts), and for
// the OracleNode names and namespaces of `status`, `logs` and `cycle` (through kubectl, when it is installed).
//   bash: source <(oracle-node completion bash)
//   zsh:  source <(oracle-node completion zsh)   (or save it as _oracle-node in a directory of $fpath)
import type { Subcommand } from './subcommand.js';
import { SUMMARIES } from './summaries.js';

const HELP = `Usage: oracle-node completion bash|zsh

Prints a shell completion script:
  bash: source <(oracle-node completion bash)       (e.g. in ~/.bashrc)
  zsh:  source <(oracle-node completion zsh)        (e.g. in ~/.zshrc, after compinit)
`;

/** Commands that take an OracleNode name. */
const NODE_COMMANDS = ['status', 'logs', 'cycle'];

export function bashCompletion(): string {
  const names = Object.keys(SUMMARIES).join(' ');
  return `# bash completion for oracle-node (oracle-node completion bash)
_oracle_node() {
  local cur prev cmd
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd="\${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${names} --help --version" -- "$cur") )
    return
  fi
  case "$cmd" in
    ${NODE_COMMANDS.join('|')})
      if [ "$prev" = "-n" ] || [ "$prev" = "--namespace" ]; then
        COMPREPLY=( $(compgen -W "$(kubectl get namespaces -o name 2>/dev/null | sed 's|^namespace/||')" -- "$cur") )
      elif [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "-n --namespace --kubeconfig --context --help" -- "$cur") )
      else
        COMPREPLY=( $(compgen -W "$(kubectl get oraclenodes -o name 2>/dev/null | sed 's|^.*/||')" -- "$cur") )
      fi ;;
    completion) COMPREPLY=( $(compgen -W "bash zsh" -- "$cur") ) ;;
    *) COMPREPLY=( $(compgen -f -- "$cur") ) ;;
  esac
}
complete -F _oracle_node oracle-node
complete -F _oracle_node kubectl-oracle_node
`;
}

export function zshCompletion(): string {
  const described = Object.entries(SUMMARIES)
    .map(([name, summary]) => `    '${name}:${summary.replace(/[':]/g, ' ')}'`)
    .join('\n');
  return `#compdef oracle-node kubectl-oracle_node
# zsh completion for oracle-node (oracle-node completion zsh)
_oracle_node() {
  local -a commands
  commands=(
${described}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  case "$words[2]" in
    ${NODE_COMMANDS.join('|')})
      if [[ "$words[CURRENT-1]" == (-n|--namespace) ]]; then
        compadd -- \${(f)"$(kubectl get namespaces -o name 2>/dev/null | sed 's|^namespace/||')"}
      elif [[ "$PREFIX" == -* ]]; then
        compadd -- -n --namespace --kubeconfig --context --help
      else
        compadd -- \${(f)"$(kubectl get oraclenodes -o name 2>/dev/null | sed 's|^.*/||')"}
      fi ;;
    completion) compadd bash zsh ;;
    *) _files ;;
  esac
}
if [[ "$funcstack[1]" == _oracle_node ]]; then _oracle_node "$@"; else compdef _oracle_node oracle-node kubectl-oracle_node; fi
`;
}

export const completionCommand: Subcommand = {
  async run(argv) {
    const [shell, ...rest] = argv;
    if (shell === '-h' || shell === '--help') {
      process.stdout.write(HELP);
      return 0;
    }
    if (rest.length > 0 || (shell !== 'bash' && shell !== 'zsh')) {
      process.stderr.write(HELP);
      return 2;
    }
    process.stdout.write(shell === 'bash' ? bashCompletion() : zshCompletion());
    return 0;
  },
};
