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
