// The WebGL renderer, set up for the machine it runs on. createRenderer throws when this
// browser cannot give a WebGL context; the stage turns that into its no-op stand-in.

import * as THREE from 'three';

/** True when WebGL is drawn by the CPU (docs/scene.md, the render loop). */
function softwareWebGL() {
  try {
    const probe = document.createElement('canvas').getContext('webgl2');
    if (!probe) return false;
    const ext = probe.getExtension('WEBGL_debug_renderer_info');
    const name = String(probe.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : probe.RENDERER));
    probe.getExtension('WEBGL_lose_context')?.loseContext();
    return /swiftshader|llvmpipe|software/i.test(name);
  } catch {
    return false;
  }
}

export function createRenderer(canvas) {
  const software = softwareWebGL();
  const renderer = new THREE.WebGLRenderer({
    canvas,
    antialias: !software,
    powerPreference: 'high-performance',
  });
  renderer.setPixelRatio(software ? 1 : Math.min(window.devicePixelRatio || 1, 2));
  renderer.outputColorSpace = THREE.SRGBColorSpace;
  renderer.frameMs = software ? 1000 / 30 : 0;
  return renderer;
}
