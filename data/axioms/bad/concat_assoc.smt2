; Known-bad fixture (semantics.md section 5): concat associativity. Wrong
; under split-tree semantics (the two sides have different split trees);
; together with A25/A26 it makes any two tensors equal. Never part of the
; default axiom set (taso_axioms_load reads only the folder's top level);
; the validator's redundancy check and the verifier's tests load it on
; purpose.

;; @axiom BAD1
;; @about concat is associative (WRONG)
;; @rank 2,3,4
;; @shape x = *
;; @shape y = * [a]=e
;; @shape z = * [a]=f
;; @param a = axes
(assert (forall ((a Int) (x T) (y T) (z T))
  (= (concat a x (concat a y z)) (concat a (concat a x y) z))))
