; A small typed kitchen, new to the suite (tests/test_nl2pddl_generate.py): a cook walks between
; places, carries one item at a time, chops food with a knife and cooks chopped food on a stove.
(define (domain kitchen)
  (:requirements :strips :typing)
  (:types food tool - item
          place item)
  (:predicates
    (cook-at ?p - place)
    (item-at ?i - item ?p - place)
    (holding ?i - item)
    (hands-free)
    (stove ?p - place)
    (chopped ?f - food)
    (cooked ?f - food))
  (:action walk
    :parameters (?from ?to - place)
    :precondition (cook-at ?from)
    :effect (and (cook-at ?to) (not (cook-at ?from))))
  (:action pick-up
    :parameters (?i - item ?p - place)
    :precondition (and (cook-at ?p) (item-at ?i ?p) (hands-free))
    :effect (and (holding ?i) (not (item-at ?i ?p)) (not (hands-free))))
  (:action put-down
    :parameters (?i - item ?p - place)
    :precondition (and (cook-at ?p) (holding ?i))
    :effect (and (item-at ?i ?p) (hands-free) (not (holding ?i))))
  (:action chop
    :parameters (?f - food ?k - tool ?p - place)
    :precondition (and (cook-at ?p) (item-at ?f ?p) (holding ?k))
    :effect (chopped ?f))
  (:action cook
    :parameters (?f - food ?p - place)
    :precondition (and (cook-at ?p) (stove ?p) (item-at ?f ?p) (chopped ?f))
    :effect (cooked ?f)))
