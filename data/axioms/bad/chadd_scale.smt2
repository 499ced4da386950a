; Known-bad fixture: C2 with the scale forgotten on the shift, as a hand
; fold of a normalization into a convolution's bias might have it:
; (x + u) * v = x * v + u. The small-tensor check finds a counterexample
; wherever a value of u or v differs from what makes it hold by chance.

;; @axiom BAD5
;; @about a per-channel scale passes a per-channel shift unchanged (WRONG)
;; @rank 2,3,4
;; @param a = axes
;; @shape x = * [a]=e
;; @shape u = e
;; @shape v = e
(assert (forall ((a Int) (x T) (u T) (v T))
  (= (chmul a (chadd a x u) v) (chadd a (chmul a x v) u))))
