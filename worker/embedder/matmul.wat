;; out[r, :] += x[r, :] @ w  for r < rows (x: rows x k, w: k x m, out: rows x m; f32,
;; row-major, byte offsets; m a multiple of 4), with 128-bit SIMD: 4 columns at a time.
(module
  (memory (export "memory") 1)
  (func (export "matmul") (param $x i32) (param $rows i32) (param $k i32) (param $w i32)
                          (param $m i32) (param $out i32)
    (local $r i32) (local $i i32) (local $j i32) (local $a v128) (local $o i32)
    (local $wi i32) (local $xv f32) (local $mb i32) (local $p i32)
    (local.set $mb (i32.shl (local.get $m) (i32.const 2)))
    (block $done_r (loop $loop_r
      (br_if $done_r (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $o (i32.add (local.get $out) (i32.mul (local.get $r) (local.get $mb))))
      (local.set $i (i32.const 0))
      (local.set $wi (local.get $w))
      (block $done_i (loop $loop_i
        (br_if $done_i (i32.ge_u (local.get $i) (local.get $k)))
        (local.set $xv (f32.load (i32.add (local.get $x)
          (i32.shl (i32.add (i32.mul (local.get $r) (local.get $k)) (local.get $i)) (i32.const 2)))))
        (if (f32.ne (local.get $xv) (f32.const 0)) (then
          (local.set $a (f32x4.splat (local.get $xv)))
          (local.set $j (i32.const 0))
          (block $done_j (loop $loop_j
            (br_if $done_j (i32.ge_u (local.get $j) (local.get $mb)))
            (local.set $p (i32.add (local.get $o) (local.get $j)))
            (v128.store (local.get $p)
              (f32x4.add (v128.load (local.get $p))
                         (f32x4.mul (local.get $a)
                                    (v128.load (i32.add (local.get $wi) (local.get $j))))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $loop_j)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $wi (i32.add (local.get $wi) (local.get $mb)))
        (br $loop_i)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $loop_r)))))
