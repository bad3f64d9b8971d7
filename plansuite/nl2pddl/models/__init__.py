"""The learned NL→PDDL models (torch) and the critics backed by a model.

- Training: :mod:`.text_tokenizer` (a BPE trained on the dataset's text), :mod:`.text_datamodules`
  (pairs and critic examples), :mod:`.problem_generator_module` and :mod:`.critic_module` (the
  LightningModules, ``plansuite-train model=problem_generator|critic``).
- Use: :mod:`.learned` (the local generator ``backend=local`` and the classifier critic
  ``critic=learned`` over their exports), :mod:`.likelihood_critic` (the generator as critic,
  ``critic=likelihood``) and :mod:`.chat_critic` (a chat model as critic, ``critic=llm``).
"""
