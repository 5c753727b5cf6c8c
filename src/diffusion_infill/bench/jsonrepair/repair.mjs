// Reads JSON lines of broken texts on stdin; writes one JSON line per text: the repaired text, or null when
// jsonrepair throws. One process for a whole corpus, so Node's start-up is paid once.
import { createInterface } from 'node:readline'
import { jsonrepair } from 'jsonrepair'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  let repaired = null
  try {
    repaired = jsonrepair(JSON.parse(line))
  } catch {
    repaired = null
  }
  process.stdout.write(JSON.stringify(repaired) + '\n')
}
