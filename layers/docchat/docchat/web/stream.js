// Server-Sent Events over fetch: EventSource cannot POST, and /chat takes the conversation as
// a JSON body.

/** Each `{type, data}` event of a text/event-stream response, until it ends or `signal` aborts. */
export async function* sseEvents(response, signal) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      let type = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { type, data: JSON.parse(data.join("\n")) };
    }
  }
}
