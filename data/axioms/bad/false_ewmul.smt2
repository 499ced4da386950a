; Known-false fixture: ewmul equals ewadd. With it in the axiom set the
; E-matching of a verifier query never saturates (every ewadd term gets an
; ewmul twin that the distributivity axioms expand again), which once made
; a query run past its timeout into gigabytes inside Z3_solver_check
; (issue 18). tests/test_verify_tools.sh copies data/axioms, adds this file
; and checks that every query still ends at its limits. Never part of the
; default axiom set (taso_axioms_load reads only the folder's top level).

;; @axiom BAD3
;; @about ewmul is ewadd (false: 1 * 1 is not 1 + 1)
;; @rank 2,3,4
;; @shape x = *
;; @shape y = *
(assert (forall ((x T) (y T))
  (= (ewmul x y) (ewadd x y))))
