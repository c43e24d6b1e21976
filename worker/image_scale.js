// Scaling a picture down in the agent's worker, for one too large for the model's context
// window (py_agent.attachments.scaling): createImageBitmap and OffscreenCanvas, which a
// worker has. Imported by py_agent/browser/main.py the first time a picture does not fit.
//
//   scale(bytes: Uint8Array, type: string, factor: number) -> {bytes: Uint8Array, type}

export async function scale(bytes, type, factor) {
  const bitmap = await createImageBitmap(new Blob([bytes], {type}));
  const width = Math.max(1, Math.round(bitmap.width * factor));
  const height = Math.max(1, Math.round(bitmap.height * factor));
  const canvas = new OffscreenCanvas(width, height);
  const output = type === 'image/png' || type === 'image/gif' ? 'image/png' : 'image/jpeg';
  const context = canvas.getContext('2d');
  if (output === 'image/jpeg') {
    context.fillStyle = '#fff';
    context.fillRect(0, 0, width, height);
  }
  context.drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  const blob = await canvas.convertToBlob({type: output, quality: 0.9});
  return {bytes: new Uint8Array(await blob.arrayBuffer()), type: output};
}
