// A row of a real data hall, built from code in metres: a storage rack, a network rack and
// four GPU racks of four 8-GPU servers each, fibre in a tray overhead, one server slid out
// with its lid off (CPUs at the front, eight GPUs with their memory on a board behind) and a
// person for scale. Sizes are the real ones (a rack slot, "1U", is 44.45 mm); surfaces are
// simplified. It has its own small renderer that draws only when asked (open, resize, drag).

import * as THREE from 'three';

const U = 0.04445; // one rack unit, metres
const RACK = { w: 0.6, h: 2.0, d: 1.2 }; // a 42U cabinet with its frame
const PITCH = 0.64; // rack to rack along the row
const SERVER_U = 8;
const PERSON = 1.75;

// Where each callout sits from the point it names, in CSS px, so neighbours do not collide.
export const LEADS = {
  storage_top: [-110, -46],
  storage_low: [-120, 36],
  cpus: [-40, -92],
  hbm: [150, -70],
  network_rack: [-20, 70],
  gpu_rack: [80, -60],
  tray: [130, 34],
};

// ---- surfaces drawn once on small canvases ----

function canvasTexture(w, h, draw) {
  const c = document.createElement('canvas');
  c.width = w;
  c.height = h;
  draw(c.getContext('2d'), w, h);
  const t = new THREE.CanvasTexture(c);
  t.colorSpace = THREE.SRGBColorSpace;
  t.anisotropy = 4;
  return t;
}

// The front of a GPU server: a champagne-gold grille over a dark box, a status light.
const serverFront = () => canvasTexture(512, 136, (g, w, h) => {
  g.fillStyle = '#15171b';
  g.fillRect(0, 0, w, h);
  g.fillStyle = '#b99a62';
  for (let y = 10; y < h - 8; y += 9) {
    for (let x = 14 + ((y / 9) % 2) * 5; x < w - 14; x += 10) g.fillRect(x, y, 6, 5);
  }
  g.fillStyle = '#76b900';
  g.fillRect(w - 30, h - 14, 14, 6);
});

// The front of a leaf / spine switch: two rows of 32 ports, a few link lights on.
const switchFront = () => canvasTexture(512, 32, (g, w, h) => {
  g.fillStyle = '#202328';
  g.fillRect(0, 0, w, h);
  let seed = 7;
  const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  for (let row = 0; row < 2; row += 1) {
    for (let i = 0; i < 32; i += 1) {
      const x = 20 + i * 14.6;
      const y = 4 + row * 14;
      g.fillStyle = '#0b0c0e';
      g.fillRect(x, y, 11, 10);
      g.fillStyle = rand() > 0.25 ? '#3ddc84' : '#5a4a1a';
      g.fillRect(x + 4, y + 3, 3, 3);
    }
  }
});

// The front of a storage server: a row of drive bays with blue activity lights.
const storageFront = () => canvasTexture(512, 64, (g, w, h) => {
  g.fillStyle = '#1b1e23';
  g.fillRect(0, 0, w, h);
  for (let i = 0; i < 24; i += 1) {
    const x = 12 + i * 20.5;
    g.fillStyle = '#2c3038';
    g.fillRect(x, 6, 17, h - 12);
    g.fillStyle = i % 3 ? '#4aa3ff' : '#9fd0ff';
    g.fillRect(x + 6, h - 14, 5, 4);
  }
});

// The raised floor: 60 cm tiles, perforated in the cold aisle in front of the racks.
const floorTiles = () => canvasTexture(256, 256, (g, w, h) => {
  g.fillStyle = '#3a414c';
  g.fillRect(0, 0, w, h);
  g.strokeStyle = '#262b33';
  g.lineWidth = 4;
  g.strokeRect(0, 0, w, h);
});

// ---- the pieces ----

function box(w, h, d, material) {
  return new THREE.Mesh(new THREE.BoxGeometry(w, h, d), material);
}

/** A cabinet: a dark frame open at the front, standing with its base at y = 0. */
function cabinet(mat) {
  const g = new THREE.Group();
  const side = 0.02;
  const left = box(side, RACK.h, RACK.d, mat.frame);
  left.position.set(-RACK.w / 2 + side / 2, RACK.h / 2, 0);
  const right = left.clone();
  right.position.x = RACK.w / 2 - side / 2;
  const top = box(RACK.w, 0.04, RACK.d, mat.frame);
  top.position.y = RACK.h - 0.02;
  const back = box(RACK.w, RACK.h, 0.02, mat.frame);
  back.position.set(0, RACK.h / 2, -RACK.d / 2 + 0.01);
  const plinth = box(RACK.w, 0.08, RACK.d, mat.frame);
  plinth.position.y = 0.04;
  g.add(left, right, top, back, plinth);
  return g;
}

/** A rack-mounted box `units` tall whose front face wears `front`, bottom at slot `slot`. */
function mounted(units, slot, front, mat, depth = 0.9) {
  const hgt = units * U - 0.004;
  const m = box(RACK.w - 0.05, hgt, depth, [mat.chassis, mat.chassis, mat.chassis, mat.chassis, front, mat.chassis]);
  m.position.set(0, 0.1 + slot * U + hgt / 2, RACK.d / 2 - depth / 2 - 0.03);
  return m;
}

/** One 8-GPU server slid out with its lid off: CPUs at the front, eight GPUs behind. */
function openServer(mat) {
  const g = new THREE.Group();
  const w = RACK.w - 0.05;
  const d = 0.9;
  const hgt = SERVER_U * U;
  const floorPan = box(w, 0.01, d, mat.chassis);
  floorPan.position.y = 0.005;
  const sideL = box(0.01, hgt, d, mat.chassis);
  sideL.position.set(-w / 2, hgt / 2, 0);
  const sideR = sideL.clone();
  sideR.position.x = w / 2;
  // Only the tray's front lip: the rest of the box stays in the rack, so the inside shows.
  const lip = 2 * U;
  const face = box(w, lip, 0.02, [mat.chassis, mat.chassis, mat.chassis, mat.chassis, mat.serverFront, mat.chassis]);
  face.position.set(0, lip / 2, d / 2);
  g.add(floorPan, sideL, sideR, face);
  // Two CPU coolers just behind the front.
  const anchors = {};
  for (const x of [-0.12, 0.12]) {
    const cpu = box(0.11, 0.07, 0.11, mat.copper);
    cpu.position.set(x, 0.045, d / 2 - 0.16);
    g.add(cpu);
  }
  anchors.cpus = new THREE.Vector3(0, 0.09, d / 2 - 0.16);
  // The GPU board: eight tall heatsinks in two rows of four, switch chips between them.
  const board = box(w - 0.04, 0.012, 0.5, mat.board);
  board.position.set(0, 0.016, -0.14);
  g.add(board);
  for (let row = 0; row < 2; row += 1) {
    for (let i = 0; i < 4; i += 1) {
      const sink = box(0.1, 0.16, 0.17, mat.sink);
      sink.position.set(-0.195 + i * 0.13, 0.1, -0.03 - row * 0.24);
      // The memory stacks beside each GPU chip, where the model lives.
      const hbm = box(0.1, 0.012, 0.035, mat.hbm);
      hbm.position.set(sink.position.x, 0.028, sink.position.z + 0.105);
      g.add(sink, hbm);
    }
  }
  for (let i = 0; i < 4; i += 1) {
    const nvs = box(0.05, 0.03, 0.05, mat.copper);
    nvs.position.set(-0.18 + i * 0.12, 0.035, -0.15);
    g.add(nvs);
  }
  anchors.hbm = new THREE.Vector3(-0.195, 0.05, 0.075);
  return { group: g, anchors };
}

function person(mat) {
  const g = new THREE.Group();
  const r = 0.17;
  const body = new THREE.Mesh(new THREE.CapsuleGeometry(r, PERSON - 0.25 - 2 * r, 6, 16), mat.person);
  body.position.y = (PERSON - 0.25) / 2;
  const head = new THREE.Mesh(new THREE.SphereGeometry(0.11, 20, 14), mat.person);
  head.position.y = PERSON - 0.11;
  g.add(body, head);
  return g;
}

/** A fibre bundle from the tray down into a rack's top. */
function fibre(from, to, mat) {
  const mid = new THREE.Vector3((from.x + to.x) / 2, Math.max(from.y, to.y) + 0.05, (from.z + to.z) / 2);
  const curve = new THREE.QuadraticBezierCurve3(from, mid, to);
  return new THREE.Mesh(new THREE.TubeGeometry(curve, 16, 0.018, 6, false), mat);
}

/**
 * Build the hall on `canvas`. Returns {render(), resize(w, h), anchors (name -> Vector3),
 * project(name) -> {x, y, visible} in CSS px, orbit(dx), dispose()}.
 */
export function buildHall(canvas) {
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  renderer.outputColorSpace = THREE.SRGBColorSpace;
  const scene = new THREE.Scene();
  scene.background = new THREE.Color('#0c1424');
  scene.fog = new THREE.Fog('#0c1424', 9, 16);

  const textures = [serverFront(), switchFront(), storageFront(), floorTiles()];
  const [serverTex, switchTex, storageTex, floorTex] = textures;
  floorTex.wrapS = floorTex.wrapT = THREE.RepeatWrapping;
  floorTex.repeat.set(30, 30);
  const mat = {
    frame: new THREE.MeshStandardMaterial({ color: '#1d2026', roughness: 0.6, metalness: 0.5 }),
    chassis: new THREE.MeshStandardMaterial({ color: '#2a2e35', roughness: 0.5, metalness: 0.6 }),
    serverFront: new THREE.MeshStandardMaterial({ map: serverTex, roughness: 0.45, metalness: 0.5 }),
    switchFront: new THREE.MeshStandardMaterial({ map: switchTex, roughness: 0.5, emissive: '#ffffff', emissiveMap: switchTex, emissiveIntensity: 0.7 }),
    storageFront: new THREE.MeshStandardMaterial({ map: storageTex, roughness: 0.5, emissive: '#ffffff', emissiveMap: storageTex, emissiveIntensity: 0.3 }),
    board: new THREE.MeshStandardMaterial({ color: '#1f5a3a', roughness: 0.7 }),
    sink: new THREE.MeshStandardMaterial({ color: '#b9bec6', roughness: 0.35, metalness: 0.8 }),
    copper: new THREE.MeshStandardMaterial({ color: '#b87333', roughness: 0.35, metalness: 0.8 }),
    hbm: new THREE.MeshStandardMaterial({ color: '#9d8fd6', emissive: '#6d5fc0', emissiveIntensity: 0.6 }),
    tray: new THREE.MeshStandardMaterial({ color: '#e2b93b', roughness: 0.6, metalness: 0.3 }),
    fibre: new THREE.MeshStandardMaterial({ color: '#56b4e9', roughness: 0.5, emissive: '#1d5f86', emissiveIntensity: 0.5 }),
    floor: new THREE.MeshStandardMaterial({ map: floorTex, roughness: 0.9 }),
    person: new THREE.MeshStandardMaterial({ color: '#8d96a6', roughness: 0.8 }),
  };

  const floor = new THREE.Mesh(new THREE.PlaneGeometry(18, 18), mat.floor);
  floor.rotation.x = -Math.PI / 2;
  scene.add(floor);

  const anchors = {};
  const row = new THREE.Group();
  scene.add(row);
  const rackX = (i) => i * PITCH;

  // Rack 0: storage (the data lake and the checkpoints), 2U storage servers.
  const storage = cabinet(mat);
  storage.position.x = rackX(0);
  for (let i = 0; i < 16; i += 1) storage.add(mounted(2, i * 2 + 2, mat.storageFront, mat));
  row.add(storage);
  anchors.storage_top = new THREE.Vector3(rackX(0), 1.55, RACK.d / 2);
  anchors.storage_low = new THREE.Vector3(rackX(0), 0.55, RACK.d / 2);

  // Rack 1: network, 1U leaf and spine switches with patch space between them.
  const net = cabinet(mat);
  net.position.x = rackX(1);
  for (let i = 0; i < 12; i += 1) net.add(mounted(1, 6 + i * 3, mat.switchFront, mat, 0.6));
  row.add(net);
  anchors.network_rack = new THREE.Vector3(rackX(1), 1.2, RACK.d / 2);

  // Racks 2-5: four GPU servers each (8U); the top one of rack 2 is slid out, lid off.
  const slot = (s) => 2 + s * (SERVER_U + 1);
  let open = null;
  for (let r = 0; r < 4; r += 1) {
    const rack = cabinet(mat);
    rack.position.x = rackX(2 + r);
    for (let s = 0; s < 4; s += 1) {
      if (r === 0 && s === 3) continue;
      rack.add(mounted(SERVER_U, slot(s), mat.serverFront, mat));
    }
    row.add(rack);
  }
  {
    const o = openServer(mat);
    o.group.position.set(rackX(2), 0.1 + slot(3) * U, 0.7);
    row.add(o.group);
    open = o;
    for (const [k, v] of Object.entries(o.anchors)) anchors[k] = v.clone().add(o.group.position);
  }
  anchors.gpu_rack = new THREE.Vector3(rackX(4), 1.35, RACK.d / 2);

  // The cable tray above the row, and fibre bundles from it down into every rack.
  const last = rackX(5);
  const tray = box(last + RACK.w + 0.4, 0.08, 0.3, mat.tray);
  tray.position.set(last / 2, 2.35, 0.1);
  row.add(tray);
  for (let r = 0; r < 6; r += 1) {
    const from = new THREE.Vector3(rackX(r) + 0.12, 2.35, 0.1);
    const to = new THREE.Vector3(rackX(r) + 0.12, 1.98, -0.3);
    row.add(fibre(from, to, mat.fibre));
  }
  anchors.tray = new THREE.Vector3(rackX(3), 2.4, 0.1);

  // A person for scale, in the cold aisle.
  const who = person(mat);
  who.position.set(-0.62, 0, 0.75);
  scene.add(who);

  // Light: a cool overhead wash and a key from the front left.
  scene.add(new THREE.HemisphereLight('#cfdcff', '#1a2233', 1.4));
  const key = new THREE.DirectionalLight('#ffffff', 2.2);
  key.position.set(-3, 5, 6);
  scene.add(key);
  const aisle = new THREE.PointLight('#9fc4ff', 6, 6);
  aisle.position.set(1.6, 2.6, 2.2);
  scene.add(aisle);

  const camera = new THREE.PerspectiveCamera(36, 2, 0.1, 60);
  const target = new THREE.Vector3(1.5, 1.15, 0.4);
  let azimuth = -0.34;
  const radius = 3.9;
  const lift = 1.45;
  function place() {
    camera.position.set(target.x + radius * Math.sin(azimuth), target.y + lift, target.z + radius * Math.cos(azimuth));
    camera.lookAt(target);
  }
  place();

  let size = { w: 1, h: 1 };
  return {
    anchors,
    camera,
    openServer: open,
    resize(w, h) {
      size = { w: Math.max(1, w), h: Math.max(1, h) };
      renderer.setSize(size.w, size.h, false);
      camera.aspect = size.w / size.h;
      // Keep the whole row in the picture on narrow panels.
      camera.fov = camera.aspect < 1.6 ? 36 * (1.6 / camera.aspect) ** 0.6 : 36;
      camera.updateProjectionMatrix();
    },
    /** Turn the view around the row by `d` radians, within a range that keeps it legible. */
    orbit(d) {
      azimuth = Math.max(-0.95, Math.min(0.6, azimuth + d));
      place();
    },
    render() {
      renderer.render(scene, camera);
    },
    /** Draw, then read back a grid of pixels: how many different colours the picture has
     * (a blank or failed drawing has one or two). */
    distinctColours() {
      renderer.render(scene, camera);
      const gl = renderer.getContext();
      const w = gl.drawingBufferWidth;
      const hgt = gl.drawingBufferHeight;
      const px = new Uint8Array(4);
      const seen = new Set();
      for (let i = 1; i < 16; i += 1) {
        for (let j = 1; j < 10; j += 1) {
          gl.readPixels(Math.floor((w * i) / 16), Math.floor((hgt * j) / 10), 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
          seen.add(`${px[0] >> 3},${px[1] >> 3},${px[2] >> 3}`);
        }
      }
      return seen.size;
    },
    /** Where an anchor falls on the canvas, in CSS px, and whether it is in front of the camera. */
    project(name) {
      const v = anchors[name].clone().project(camera);
      return { x: ((v.x + 1) / 2) * size.w, y: ((1 - v.y) / 2) * size.h, visible: v.z < 1 && Math.abs(v.x) <= 1 && Math.abs(v.y) <= 1 };
    },
    dispose() {
      scene.traverse((o) => {
        o.geometry?.dispose?.();
      });
      for (const m of Object.values(mat)) m.dispose();
      for (const t of textures) t.dispose();
      renderer.dispose();
      renderer.forceContextLoss?.();
    },
  };
}
