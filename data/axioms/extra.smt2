; Operator properties beyond the original's A0-A43, each a true property
; of an operator of this project that the original did not have.

;; @axiom X1
;; @about the two layouts of transpose compute the same tensor
;; @note The layout is a cost and layout-search choice (a strided view
;; @note or a contiguous copy), not a different value; the generator pairs
;; @note the two, so without this axiom those pairs could not be proved.
;; @shape x = m n
(assert (forall ((x T))
  (= (transpose 1 x) (transpose 0 x))))

;; @axiom X2
;; @about relu after matmul is matmul with a fused relu
;; @note The counterpart of A13 for matmul, whose fused activation the
;; @note original did not have.
;; @shape x = m k
;; @shape y = k n
(assert (forall ((x T) (y T))
  (= (relu (matmul 0 x y)) (matmul 1 x y))))
