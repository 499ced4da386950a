; Known-bad fixture: X31 without its relu on z. relu(z * w) = z * relu(w)
; holds where z >= 0 and fails where z < 0 and w != 0. With @relu max the
; validator takes relu as max(v, 0), so it must find counterexamples here
; while it proves X31 (tests/test_validate_tools.sh): the key decides with
; relu's sign, not by making relu anything. Never part of the default set.

;; @axiom BAD7
;; @about relu of a tensor scaled by a scalar scales the scalar's relu (WRONG: z may be negative)
;; @relu max
;; @rank 2
;; @shape z = *
;; @shape w = scalar
(assert (forall ((z T) (w T))
  (= (relu (smul z w)) (smul z (relu w)))))
