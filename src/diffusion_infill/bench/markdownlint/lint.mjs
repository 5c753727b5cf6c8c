// Reads JSON lines of Markdown texts on stdin; writes one JSON line per text: the markdownlint
// violations as [rule, line] pairs (rule: its first name, like "MD031"; line: 1-based). One Node
// process for a whole corpus, so start-up is paid once. Default configuration: every rule on.
import { createInterface } from 'node:readline'
import { lint } from 'markdownlint/sync'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  const results = lint({ strings: { text: JSON.parse(line) } })
  const found = results.text.map((error) => [error.ruleNames[0], error.lineNumber])
  process.stdout.write(JSON.stringify(found) + '\n')
}
