"""crawler"""
