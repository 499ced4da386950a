; Axioms C1-: the per-channel affine operators chmul and chadd (batch
; normalization in inference form is chadd(1, chmul(1, x, scale), bias)).
; Only what folding a batch normalization into the convolution before it
; needs; the shift then stays a chadd on the convolution's channel axis,
; which the runtime fuses into the convolution as its bias.

;; @axiom C1
;; @about scaling a conv2d's output channels scales its weight's output channels
;; @note Output channel o of conv2d is a sum over the slice o of the weight
;; @note (axis 0), whatever the groups, so multiplying it by v[o] is the
;; @note same as multiplying that slice by v[o]. Split trees agree: conv2d's
;; @note axis 1 takes the weight's axis-0 tree, which chmul keeps. With a
;; @note fused relu it is false (v may be negative).
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape v = co
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (v T))
  (= (chmul 1 (conv2d sh sw pad 0 x y) v) (conv2d sh sw pad 0 x (chmul 0 y v)))))

; C2-C6: what folding a normalization into a convolution that has a bias
; of its own needs (ONNX Conv with B imports as chadd(1, conv2d(x, w), B),
; then BatchNormalization as chmul and chadd): the scale moves through the
; bias, and the shifts then merge into one bias. The vectors' products and
; sums are weight-only and folded into new weights.

;; @axiom C2
;; @about a per-channel scale distributes over a per-channel shift on the same axis
;; @note (x + u) * v = x * v + u * v slice by slice.
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape u = e
;; @shape v = e
(assert (forall ((a Int) (x T) (u T) (v T))
  (= (chmul a (chadd a x u) v) (chadd a (chmul a x v) (ewmul u v)))))

;; @axiom C3
;; @about two per-channel shifts on the same axis are one shift by their sum
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape u = e
;; @shape v = e
(assert (forall ((a Int) (x T) (u T) (v T))
  (= (chadd a (chadd a x u) v) (chadd a x (ewadd u v)))))

;; @axiom C4
;; @about two per-channel scales on the same axis are one scale by their product
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape u = e
;; @shape v = e
(assert (forall ((a Int) (x T) (u T) (v T))
  (= (chmul a (chmul a x u) v) (chmul a x (ewmul u v)))))

;; @axiom C5
;; @about per-channel scales commute, on any two axes
;; @note Each element is multiplied by u at its index on axis b and by v at
;; @note its index on axis a, in either order.
;; @note Checked on small tensors with the scale or shift u on axis 1 and v
;; @note on axis 0 of a rank-4 tensor; on one axis it follows from C4 or C3
;; @note with A3 or A1.
;; @shape x = p q h w
;; @shape u = q
;; @shape v = p
;; @param a = 0
;; @param b = 1
(assert (forall ((a Int) (b Int) (x T) (u T) (v T))
  (= (chmul a (chmul b x u) v) (chmul b (chmul a x v) u))))

;; @axiom C6
;; @about per-channel shifts commute, on any two axes
;; @note Checked on small tensors with the scale or shift u on axis 1 and v
;; @note on axis 0 of a rank-4 tensor; on one axis it follows from C4 or C3
;; @note with A3 or A1.
;; @shape x = p q h w
;; @shape u = q
;; @shape v = p
;; @param a = 0
;; @param b = 1
(assert (forall ((a Int) (b Int) (x T) (u T) (v T))
  (= (chadd a (chadd b x u) v) (chadd b (chadd a x v) u))))

; C7-C10: how the per-channel operators meet the element-wise ones and a
; convolution's input channels. They hold for every operand, so the
; batchnorm job's candidates that only move a scale or shift around are
; proved rather than left unknown.

;; @axiom C7
;; @about a per-channel scale distributes over ewadd
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape y = * [a]=e
;; @shape v = e
(assert (forall ((a Int) (x T) (y T) (v T))
  (= (chmul a (ewadd x y) v) (ewadd (chmul a x v) (chmul a y v)))))

;; @axiom C8
;; @about a per-channel scale of an ewmul scales one operand
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape y = * [a]=e
;; @shape v = e
(assert (forall ((a Int) (x T) (y T) (v T))
  (= (chmul a (ewmul x y) v) (ewmul (chmul a x v) y))))

;; @axiom C9
;; @about a per-channel shift of an ewadd shifts one operand
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape y = * [a]=e
;; @shape v = e
(assert (forall ((a Int) (x T) (y T) (v T))
  (= (chadd a (ewadd x y) v) (ewadd (chadd a x v) y))))

;; @axiom C10
;; @about scaling a conv2d's input channels scales its weight's input channels
;; @note Only without groups: the weight's axis 1 then has one slice per
;; @note input channel (the guard). The scale is inside the sum over input
;; @note channels, so a fused relu and zero padding change nothing.
;; @shape x = n c h w
;; @shape y = co c kh kw
;; @shape v = c
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
;; @param act = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (act Int) (x T) (y T) (v T))
  (=> (= (dim 1 x) (dim 1 y))
      (= (conv2d sh sw pad act (chmul 1 x v) y) (conv2d sh sw pad act x (chmul 1 y v))))))

;; @axiom C11
;; @about a per-slice scale on conv2d's batch axis moves to its input
;; @note Batch element b of the output is computed from batch element b of
;; @note the input alone, linearly.
;; @shape x = n c h w
;; @shape y = co ci kh kw
;; @shape v = n
;; @kernel kh kw
;; @param sh = 1,2
;; @param sw = 1,2
;; @param pad = 0,1
(assert (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (v T))
  (= (chmul 0 (conv2d sh sw pad 0 x y) v) (conv2d sh sw pad 0 (chmul 0 x v) y))))

;; @axiom C12
;; @about two per-channel scales of one tensor add up to one scale by their sum
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape u = e
;; @shape v = e
(assert (forall ((a Int) (x T) (u T) (v T))
  (= (ewadd (chmul a x u) (chmul a x v)) (chmul a x (ewadd u v)))))

;; @axiom C13
;; @about ewmul distributes over a per-channel shift
;; @note x * (y + v) = x * y + x * v, v taken per slice of axis a.
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape y = * [a]=e
;; @shape v = e
(assert (forall ((a Int) (x T) (y T) (v T))
  (= (ewmul x (chadd a y v)) (ewadd (ewmul x y) (chmul a x v)))))
