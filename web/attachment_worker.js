/*
 * The picture worker of web/attachments.js: decodes an attached picture off the page's
 * thread, and scales it down and re-encodes it when it is larger than the models need or
 * in a format they do not take. One message in, one out:
 *
 *   {id, blob, maxSide, reencode, output}  ->  {id, ok: true, blob (null: keep the file as
 *                                               it is), width, height, originalWidth,
 *                                               originalHeight}
 *                                          |   {id, ok: false, error}   (not decodable)
 */

self.onmessage = async ({data}) => {
  const {id, blob, maxSide, reencode, output} = data;
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob);
  } catch (error) {
    self.postMessage({id, ok: false, error: String(error?.message || error)});
    return;
  }
  const originalWidth = bitmap.width;
  const originalHeight = bitmap.height;
  const scale = Math.min(1, maxSide / Math.max(originalWidth, originalHeight));
  if (scale === 1 && !reencode) {
    bitmap.close();
    self.postMessage({id, ok: true, blob: null, width: originalWidth, height: originalHeight,
                      originalWidth, originalHeight});
    return;
  }
  const width = Math.max(1, Math.round(originalWidth * scale));
  const height = Math.max(1, Math.round(originalHeight * scale));
  try {
    const canvas = new OffscreenCanvas(width, height);
    const context = canvas.getContext('2d');
    if (output === 'image/jpeg') {   // no transparency in a JPEG: white behind
      context.fillStyle = '#fff';
      context.fillRect(0, 0, width, height);
    }
    context.drawImage(bitmap, 0, 0, width, height);
    const encoded = await canvas.convertToBlob({type: output, quality: 0.9});
    self.postMessage({id, ok: true, blob: encoded, width, height, originalWidth, originalHeight});
  } catch (error) {
    self.postMessage({id, ok: false, error: String(error?.message || error)});
  } finally {
    bitmap.close();
  }
};
