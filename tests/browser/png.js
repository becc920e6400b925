/* Reads the PNG screenshots Chromium takes (8-bit RGB or RGBA, not interlaced) into
 * { width, height, px(x, y) -> [r, g, b] }, so the browser tests judge what a
 * person sees from the pixels themselves, not from the page's own record of what
 * it drew; and compares two screenshots within a tolerance. Node's zlib does the
 * inflating; the rest is the PNG format's five row filters. */
'use strict';

const zlib = require('zlib');

function paeth(a, b, c) {
  const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

function decode(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47 || buf.readUInt32BE(4) !== 0x0d0a1a0a)
    throw new Error('not a PNG');
  let width = 0, height = 0, bpp = 0;
  const idat = [];
  for (let off = 8; off + 8 <= buf.length;) {
    const len = buf.readUInt32BE(off), type = buf.toString('ascii', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8], colour = data[9], interlace = data[12];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0)
        throw new Error('PNG kind not read here: depth ' + depth + ', colour type ' + colour +
          ', interlace ' + interlace);
      bpp = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    off += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = width * bpp;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, row = y * stride;
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? out[row + i - bpp] : 0, b = y ? out[row - stride + i] : 0;
      const c = i >= bpp && y ? out[row - stride + i - bpp] : 0, x = raw[src + i];
      let v;
      if (f === 0) v = x;
      else if (f === 1) v = x + a;
      else if (f === 2) v = x + b;
      else if (f === 3) v = x + ((a + b) >> 1);
      else if (f === 4) v = x + paeth(a, b, c);
      else throw new Error('PNG row filter ' + f);
      out[row + i] = v & 255;
    }
  }
  return {
    width, height,
    px(x, y) {
      const o = (Math.round(y) * width + Math.round(x)) * bpp;
      return [out[o], out[o + 1], out[o + 2]];
    },
  };
}

/* the largest difference of one channel */
function distance(p, q) {
  return Math.max(Math.abs(p[0] - q[0]), Math.abs(p[1] - q[1]), Math.abs(p[2] - q[2]));
}

/* The share of pixels (0 to 1) that differ by more than tol in some channel; 1
 * when the sizes differ. */
function differing(a, b, tol) {
  if (a.width !== b.width || a.height !== b.height) return 1;
  let n = 0;
  for (let y = 0; y < a.height; y++)
    for (let x = 0; x < a.width; x++)
      if (distance(a.px(x, y), b.px(x, y)) > tol) n++;
  return n / (a.width * a.height);
}

module.exports = { decode, distance, differing };
